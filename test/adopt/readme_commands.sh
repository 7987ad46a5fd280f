#!/bin/sh
# Runs the commands of README.md's sections "Install" and "Preload it into a real job" as a user
# would, here:
#   - Install's `cmake --install build --prefix ~/.local` line, with HOME a temporary directory and build
#     this test's build tree (the build line itself is not run: this is that build);
#   - every fenced block that follows a `<!-- readme-test` line, in order, as one sh -e script,
#     from a directory holding `build`, `profiles` and a `train.py` (train.py.in: one rank that
#     makes an all-reduce through a library linking the emulated libnccl.so.2), with torchrun,
#     horovodrun, mpirun and srun on PATH being fake_launcher.sh (each passes its workers the
#     environment that launcher gives) and a rank started with prophet-run for --pid.
# Then checks what they did: every launcher's 8 workers loaded the installed preload, the
# emulated job's two ranks were logged and reported, both doctor forms passed, and no process said
# `prophet: ... WARN` (the exit check included). The marked blocks must hold each launcher form.
# usage: readme_commands.sh SOURCE BUILD FIXTURES
set -u
src=$1 build=$2 fix=$3
tmp=$(mktemp -d) || exit 1
held=""
trap '[ -n "$held" ] && kill $held 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; [ -f "$tmp/out" ] && { echo "---- output (tail)"; tail -n 40 "$tmp/out"; }; exit 1; }

# the section, and its marked blocks
sed -n '/^## Preload it into a real job/,/^## /p' "$src/README.md" >"$tmp/section"
[ -s "$tmp/section" ] || fail "README.md has no section 'Preload it into a real job'"
awk '/^<!-- readme-test/ {mark = 1; next}
     mark && /^```/ && !inb {inb = 1; next}
     inb && /^```/ {inb = 0; mark = 0; next}
     inb {print}' "$tmp/section" >"$tmp/script.sh"
for want in "prophet-run torchrun " "prophet-run horovodrun " "prophet-run mpirun -x LD_PRELOAD " \
    "prophet-run srun --export=" "prophet-run --observe --log " "prophet-report " \
    "prophet-doctor -- " "prophet-doctor --pid "; do
    grep -q "^$want" "$tmp/script.sh" || fail "no marked command '$want...' in the section"
done
install=$(sed -n '/^## Install/,/^## /p' "$src/README.md" | grep -m1 '^cmake --install build --prefix ' |
    sed 's/ *#.*//')
[ -n "$install" ] || fail "README.md's section 'Install' has no 'cmake --install build --prefix' line"

# a user's directory: HOME, build (this build tree), profiles, train.py; fake launchers on PATH
export HOME=$tmp/home
mkdir -p "$HOME" "$tmp/work" "$tmp/fakebin" "$tmp/records"
ln -s "$(cd "$build" && pwd -P)" "$tmp/work/build"
ln -s "$(cd "$src" && pwd -P)/profiles" "$tmp/work/profiles"
sed -e "s|@FRAMEWORK@|$(cd "$fix" && pwd -P)/libfixture_nccl_user.so|" \
    -e "s|@RECORDS@|$tmp/records|" "$src/test/adopt/train.py.in" >"$tmp/work/train.py"
for l in torchrun horovodrun mpirun srun; do ln -s "$src/test/adopt/fake_launcher.sh" "$tmp/fakebin/$l"; done
command -v python >/dev/null || ln -s "$(command -v python3)" "$tmp/fakebin/python"
export PATH="$tmp/fakebin:$PATH"
cd "$tmp/work" || exit 1
sh -ec "$install" >"$tmp/out" 2>&1 || fail "$install"
lib=$(cd "$HOME/.local/lib" 2>/dev/null && pwd -P)/libprophet.so
[ -f "$lib" ] || fail "no libprophet.so under ~/.local/lib after '$install'"

# a running rank for `prophet-doctor --pid`
"$HOME/.local/bin/prophet-run" python train.py --hold >"$tmp/held" 2>&1 &
held=$!
i=0
while ! grep -q ready "$tmp/held"; do
    i=$((i + 1)); [ $i -lt 100 ] || fail "the held rank did not start"; sleep 0.1
done

sh -ex "$tmp/script.sh" >"$tmp/out" 2>&1 || fail "a README command failed"
for l in torchrun horovodrun mpirun srun; do
    n=$(ls "$tmp/records" | grep -c "^$l\.")
    [ "$n" -eq 8 ] || fail "$l: $n workers ran train.py, the README says 8"
    for r in "$tmp/records/$l".*; do
        grep -qx "mapped=$lib" "$r" || fail "$l: $(basename "$r") did not load $lib ($(cat "$r"))"
    done
    echo "$l: 8 workers with $lib"
done
grep -q "^job: 2 of 2 ranks logged" "$tmp/out" ||
    fail "prophet-report did not report both ranks of the emulated job"
echo "emulated job: logged and reported"
grep -Eq "^PASS  calls +the preload intercepted [1-9][0-9]* NCCL calls" "$tmp/out" ||
    fail "prophet-doctor -- python train.py: no PASS calls line"
grep -q "^prophet-doctor: pid $held " "$tmp/out" || fail "prophet-doctor --pid did not look at the held rank"
[ "$(grep -c '^PASS  preload ' "$tmp/out")" -eq 2 ] || fail "not both doctor forms found the preload"
echo "prophet-doctor: both forms pass"
if grep -q "prophet: .*WARN" "$tmp/out" "$tmp/held"; then fail "a prophet: WARN line"; fi
echo "PASS"
