#!/bin/sh
# prophet-run: the preload reaches the workers of each launcher form, after any LD_PRELOAD already
# set; --log and --observe set their knobs; the emulated job runs under it; --help; a missing
# libprophet.so is reported.
# usage: prophet_run.sh BUILD
set -u
build=$1
here=$(cd "$(dirname "$0")" && pwd)
run=$build/bin/prophet-run
lib=$(cd "$build/lib" && pwd -P)/libprophet.so
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; for f in "$tmp"/out "$tmp"/w/worker.*; do [ -f "$f" ] && { echo "---- $f"; tail -n 20 "$f"; }; done; exit 1; }
other=$(cd "$build/lib/emu" && pwd -P)/libcuda.so.1 # any library: a preload set before ours

# torchrun / horovodrun form: workers inherit the environment.
mkdir -p "$tmp/w"
LD_PRELOAD=$other "$run" --log "$tmp/logs" --observe -- "$here/fake_launcher.sh" torchrun "$tmp/w" 2 \
    >"$tmp/out" 2>&1 || fail "prophet-run torchrun-like launcher failed"
for i in 0 1; do
    f=$tmp/w/worker.$i
    grep -qx "LD_PRELOAD=$other:$lib" "$f" || fail "worker $i: LD_PRELOAD is not '$other:$lib'"
    grep -qx "mapped=$lib" "$f" || fail "worker $i: libprophet.so not loaded"
    grep -qx "PROPHET_LOG=$(cd "$tmp/logs" && pwd -P)" "$f" || fail "worker $i: PROPHET_LOG not set"
    grep -qx "PROPHET_GATE=observe" "$f" || fail "worker $i: --observe did not set the observe-only mode"
done
echo "torchrun-like: ok"

# mpirun -x LD_PRELOAD form: workers get only what -x names.
rm -rf "$tmp/w"; mkdir -p "$tmp/w"
"$run" "$here/fake_launcher.sh" mpirun "$tmp/w" 2 -x LD_PRELOAD >"$tmp/out" 2>&1 ||
    fail "prophet-run mpirun-like launcher failed"
for i in 0 1; do
    grep -qx "LD_PRELOAD=$lib" "$tmp/w/worker.$i" || fail "mpirun worker $i: LD_PRELOAD not forwarded"
    grep -qx "mapped=$lib" "$tmp/w/worker.$i" || fail "mpirun worker $i: libprophet.so not loaded"
    grep -q "^PROPHET_" "$tmp/w/worker.$i" && fail "mpirun worker $i: got a variable not named with -x"
done
echo "mpirun-like: ok"

# The emulated job: intercepted on every rank, observe-only, logs written.
env LD_LIBRARY_PATH="$build/lib/emu" PROPHET_DEBUG=INFO \
    "$run" --observe --log "$tmp/joblogs" "$build/bin/prophet-emu" --timeout 60 --quiet --ranks 2 \
    --profile "$here/../../profiles/resnet50.json" --mode ddp --iters 30 --scale 0.05 \
    --elements-scale 0.01 >"$tmp/out" 2>&1 || fail "the emulated job failed under prophet-run"
[ "$(grep -c 'prophet: INFO active: .*gate observe' "$tmp/out")" -eq 2 ] ||
    fail "not every rank active in observe-only (gate observe) mode"
[ "$(grep -c 'prophet: INFO summary comm .*calls=[1-9]' "$tmp/out")" -eq 2 ] || fail "calls not intercepted"
[ "$(ls "$tmp/joblogs" | wc -l)" -ge 2 ] || fail "no schedule log per rank in --log DIR"
echo "emulated job: ok"

# --help reads as a manual page; usage errors; a prophet-run away from its libprophet.so.
"$run" --help | grep -q "^SYNOPSIS" || fail "--help has no SYNOPSIS"
"$run" --bogus true >/dev/null 2>&1; [ $? -eq 2 ] || fail "an unknown option is not a usage error"
cp "$run" "$tmp/prophet-run"
"$tmp/prophet-run" true 2>"$tmp/out"; [ $? -eq 127 ] || fail "no error without libprophet.so"
grep -q "libprophet.so not found" "$tmp/out" || fail "no message without libprophet.so"
echo "PASS"
