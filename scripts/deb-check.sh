#!/usr/bin/env bash
# The Debian package as a user gets it: `cpack -G DEB` in a built tree, `dpkg -i` into THIS system
# (root; meant for CI's throwaway machine), then, with nothing of the build tree on any path:
#   - dpkg lists the preload, its eBPF plugin (when built), every program, a manual page for each
#     program and the profiles; the package's version is the project's, and every program's
#     --version says it;
#   - ldd finds every library of every installed ELF file (the Depends field is complete);
#   - man finds each program's page;
#   - the demo job: prophet-run --log DIR prophet-emu (the emulated cluster, 2 ranks, the
#     installed ResNet-50 profile): every result exact, both ranks intercepted, a schedule log per
#     rank that prophet-report reads; as root, the preload loads its eBPF plugin from beside it;
#   - dpkg -r takes every file away again.
#   scripts/deb-check.sh [BUILD]     BUILD: a configured and built tree (default build/)
# Exit status: 0 pass, 1 fail, 77 skipped (not root, no dpkg/cpack, or the package is installed
# already: it is never replaced). About 15 s.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
build=${1:-build}
pkg=prophet-nccl
skip() { echo "deb-check: SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "dpkg -i needs root (run it where the system may be changed: CI)"
{ command -v dpkg && command -v cpack; } >/dev/null || skip "no dpkg or cpack"
[ -f "$build/CPackConfig.cmake" ] || { echo "deb-check: FAIL: $build is not a configured build tree"; exit 1; }
if dpkg -s "$pkg" >/dev/null 2>&1; then skip "$pkg is installed already"; fi
tmp=$(mktemp -d) || exit 1
installed=0
cleanup() {
    if [ $installed -eq 1 ]; then dpkg -r "$pkg" >/dev/null 2>&1; fi
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
    echo "deb-check: FAIL: $*"
    [ -s "$tmp/out" ] && { echo "---- output (tail)"; tail -n 30 "$tmp/out"; }
    exit 1
}
t0=$SECONDS

# the package
(cd "$build" && cpack -G DEB -B "$tmp/pkg") >"$tmp/out" 2>&1 || fail "cpack -G DEB failed"
deb=$(find "$tmp/pkg" -maxdepth 1 -name "${pkg}_*.deb" | head -n 1)
[ -f "$deb" ] || fail "cpack wrote no ${pkg}_*.deb"
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
[ "$(dpkg-deb -f "$deb" Package)" = "$pkg" ] || fail "the package is not named $pkg"
[ "$(dpkg-deb -f "$deb" Version)" = "$version" ] || fail "package version $(dpkg-deb -f "$deb" Version), project $version"
echo "deb-check: $(basename "$deb") ($((SECONDS - t0)) s): Depends: $(dpkg-deb -f "$deb" Depends)"

dpkg -i "$deb" >"$tmp/out" 2>&1 || fail "dpkg -i $(basename "$deb") failed"
installed=1
echo "deb-check: dpkg -i ($((SECONDS - t0)) s)"
dpkg -L "$pkg" >"$tmp/files" || fail "dpkg -L"
has_file() { grep -Eq "$1" "$tmp/files" || fail "the package has no file matching $1"; }
has_file "^/usr/lib/(.*/)?libprophet\.so$"
lib=$(grep -E "^/usr/lib/(.*/)?libprophet\.so$" "$tmp/files")
[ ! -f "$build/lib/libprophet_bw.so" ] || has_file "^$(dirname "$lib")/libprophet_bw\.so$"
progs="prophet-run prophet-doctor prophet-report prophet-sim prophet-emu"
[ ! -x "$build/bin/prophet-bwmon" ] || progs="$progs prophet-bwmon"
for p in $progs; do
    has_file "^/usr/bin/$p$"
    has_file "^/usr/share/man/man1/$p\.1(\.gz)?$"
done
has_file "^/usr/share/prophet/profiles/resnet50\.json$"

# from here on, the installed files only
clean_env=(env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME="$tmp" LANG=C.UTF-8)
for p in $progs; do
    v=$("${clean_env[@]}" "/usr/bin/$p" --version 2>&1) || fail "/usr/bin/$p --version failed: $v"
    [ "$v" = "$p (Prophet for NCCL) $version" ] || fail "/usr/bin/$p --version says '$v'"
    if command -v man >/dev/null; then
        w=$("${clean_env[@]}" man -w "$p" 2>&1) || fail "man -w $p: $w"
        case "$w" in /usr/share/man/man1/"$p".1*) ;; *) fail "man -w $p gives $w" ;; esac
    fi
done
while read -r f; do
    if [ ! -f "$f" ] || ! head -c 4 "$f" | grep -q "ELF"; then continue; fi
    "${clean_env[@]}" ldd "$f" >"$tmp/out" 2>&1
    if grep -q "not found" "$tmp/out"; then fail "ldd $f: a library is not found (Depends incomplete?)"; fi
done <"$tmp/files"
echo "deb-check: installed: $(grep -c . "$tmp/files") paths; --version, man and ldd ok ($((SECONDS - t0)) s)"

# the demo job on the emulated cluster, as README's try-it-without-a-GPU line runs it
"${clean_env[@]}" PROPHET_DEBUG=INFO prophet-run --log "$tmp/logs" prophet-emu --timeout 60 \
    --ranks 2 --profile /usr/share/prophet/profiles/resnet50.json --mode ddp --iters 30 \
    --scale 0.05 --elements-scale 0.01 >"$tmp/out" 2>&1 || fail "the demo job failed"
n=$(grep -c "prophet: .*INFO summary comm .*calls=[1-9]" "$tmp/out")
[ "$n" -eq 2 ] || fail "$n summary lines with calls for 2 ranks: the installed preload did not intercept"
grep -q "prophet: .*INFO active" "$tmp/out" || fail "the preload did not say it is active"
if [ -f "$(dirname "$lib")/libprophet_bw.so" ]; then
    grep -qE "prophet: .*INFO eBPF throughput from (in-process|shared)" "$tmp/out" ||
        fail "the installed preload did not load its eBPF plugin from beside it"
fi
"${clean_env[@]}" prophet-report "$tmp"/logs/prophet-rank0.json "$tmp"/logs/prophet-rank1.json \
    >"$tmp/out" 2>&1 || fail "prophet-report failed on the demo job's logs"
echo "deb-check: demo job: 2 ranks intercepted, logs reported ($((SECONDS - t0)) s)"

# removal
dpkg -r "$pkg" >"$tmp/out" 2>&1 || fail "dpkg -r $pkg failed"
installed=0
while read -r f; do
    [ -d "$f" ] || [ ! -e "$f" ] || fail "$f is left after dpkg -r"
done <"$tmp/files"
echo "deb-check: removed; PASS ($((SECONDS - t0)) s)"
