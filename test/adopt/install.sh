#!/bin/sh
# Installs the build tree to a temporary prefix with `cmake --install` and runs the demo job (the
# emulated cluster) against the installed copy: the preload from PREFIX/lib, its eBPF plugin beside
# it, the programs (prophet-emu too) from PREFIX/bin, the profile from PREFIX/share/prophet/profiles.
# usage: install.sh BUILD
set -u
build=$1
prefix=$(mktemp -d) || exit 1
out=$(mktemp) || exit 1
trap 'rm -rf "$prefix" "$out"' EXIT
fail() { echo "FAIL: $*"; [ -s "$out" ] && { echo "---- output (tail)"; tail -n 30 "$out"; }; exit 1; }

cmake --install "$build" --prefix "$prefix" >"$out" 2>&1 || fail "cmake --install failed"
libdir=$(dirname "$(find "$prefix" -name libprophet.so | head -n 1)")
[ -f "$libdir/libprophet.so" ] || fail "no libprophet.so installed"
for p in prophet-sim prophet-report prophet-run $(cd "$build/bin" && ls prophet-doctor 2>/dev/null); do
    [ -x "$prefix/bin/$p" ] || fail "no bin/$p installed"
done
if [ -f "$build/lib/libprophet_bw.so" ]; then # the eBPF plugin is built: it must sit beside
    [ -f "$libdir/libprophet_bw.so" ] || fail "libprophet_bw.so not installed beside libprophet.so"
    [ -x "$prefix/bin/prophet-bwmon" ] || fail "no bin/prophet-bwmon installed"
fi
prof=$prefix/share/prophet/profiles/resnet50.json
[ -f "$prof" ] || fail "no profiles installed"
[ -f "$prefix/share/doc/prophet/README.md" ] || fail "no docs installed"

# The demo job, all from the install prefix: the preload, and prophet-emu, which finds the emulated
# CUDA and NCCL in LIBDIR/prophet/emu through its RUNPATH (no LD_LIBRARY_PATH).
[ -x "$prefix/bin/prophet-emu" ] || fail "no bin/prophet-emu installed"
env -u LD_LIBRARY_PATH LD_PRELOAD="$libdir/libprophet.so" PROPHET_DEBUG=INFO \
    PROPHET_GATE=observe "$prefix/bin/prophet-emu" --timeout 60 --quiet --ranks 2 --profile "$prof" \
    --mode ddp --iters 30 --scale 0.05 --elements-scale 0.01 >"$out" 2>&1 ||
    fail "the demo job failed under the installed preload"
n=$(grep -c "prophet: .*INFO summary comm .*calls=[1-9]" "$out")
[ "$n" -eq 2 ] || fail "$n summary lines with calls for 2 ranks: the installed preload did not intercept"
grep "prophet: .*INFO summary comm" "$out" | head -n 1
if [ "$(id -u)" = 0 ] && [ -f "$build/lib/libprophet_bw.so" ]; then
    grep -qE "prophet: .*INFO eBPF throughput from (in-process|shared)" "$out" ||
        fail "the installed preload did not load its eBPF plugin from beside it"
    echo "installed eBPF plugin loaded"
fi
# The installed prophet-run finds the installed preload (and not the build tree's).
"$prefix/bin/prophet-run" sh -c 'cat /proc/$$/maps' >"$out" 2>&1 || fail "installed prophet-run failed"
grep -q "$libdir/libprophet.so" "$out" || fail "installed prophet-run did not preload $libdir/libprophet.so"
echo "PASS"
