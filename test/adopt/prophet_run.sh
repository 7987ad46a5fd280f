#!/bin/sh
# prophet-run: the preload reaches the workers of each launcher form (fake_launcher.sh: torchrun,
# horovodrun, mpirun -x, srun --export), after any LD_PRELOAD already set; --log and --observe set
# their knobs; prophet-run works through a link; the emulated job runs under it; --help; a missing
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

fl=$here/fake_launcher.sh rec=$here/worker_record.sh
launch() { # FORM: prophet-run ARGS... -- LAUNCHER ARGS... (the workers run worker_record.sh)
    form=$1; shift
    rm -rf "$tmp/w"; mkdir -p "$tmp/w"
    "$@" >"$tmp/out" 2>&1 || fail "$form: prophet-run ... failed"
    [ "$(ls "$tmp/w" | wc -l)" -eq 2 ] || fail "$form: not 2 workers"
}
worker_has() { # FORM LINE: every worker's record has LINE
    for f in "$tmp"/w/worker.*; do grep -qxF "$2" "$f" || fail "$1: $(basename "$f") lacks '$2'"; done
}
worker_lacks() { # FORM REGEX
    for f in "$tmp"/w/worker.*; do grep -Eq "$2" "$f" && fail "$1: $(basename "$f") has '$2'"; done; return 0
}

# torchrun form: workers inherit the environment; the preload comes after one already set.
launch torchrun env LD_PRELOAD="$other" "$run" --log "$tmp/logs" --observe -- \
    "$fl" torchrun --nproc_per_node=2 --standalone --no-python "$rec" "$tmp/w"
worker_has torchrun "LD_PRELOAD=$other:$lib"
worker_has torchrun "mapped=$lib"
worker_has torchrun "PROPHET_LOG=$(cd "$tmp/logs" && pwd -P)"
observe=$("$run" --observe --print | sed -n 's/^export \(PROPHET_[A-Z_]*=.*\)/\1/p' | grep -v '^PROPHET_LOG=')
[ -n "$observe" ] || fail "--observe --print names no PROPHET_ variable"
worker_has torchrun "$observe"
echo "torchrun: ok ($observe)"

# horovodrun form: Horovod forwards the whole environment.
launch horovodrun "$run" "$fl" horovodrun -np 2 "$rec" "$tmp/w"
worker_has horovodrun "LD_PRELOAD=$lib"
worker_has horovodrun "mapped=$lib"
echo "horovodrun: ok"

# mpirun -x LD_PRELOAD form: workers get only what -x names.
launch mpirun "$run" --log "$tmp/logs" "$fl" mpirun -x LD_PRELOAD -x PROPHET_LOG -np 2 "$rec" "$tmp/w"
worker_has mpirun "LD_PRELOAD=$lib"
worker_has mpirun "mapped=$lib"
worker_has mpirun "PROPHET_LOG=$(cd "$tmp/logs" && pwd -P)"
launch mpirun-without-x "$run" "$fl" mpirun -np 2 "$rec" "$tmp/w"
worker_has mpirun-without-x "LD_PRELOAD="
worker_lacks mpirun-without-x "^mapped="
echo "mpirun: ok (without -x LD_PRELOAD the workers get no preload)"
# Every rank needs the same knobs: a PROPHET_* variable that the launcher's line leaves out is
# warned about (mpirun -x, srun --export=LIST), one that it passes on is not.
mkdir -p "$tmp/bin"
ln -sf "$fl" "$tmp/bin/mpirun"
ln -sf "$fl" "$tmp/bin/srun"
PROPHET_GATE=observe launch mpirun-knobs "$run" --log "$tmp/logs" "$tmp/bin/mpirun" -x LD_PRELOAD \
    -x PROPHET_LOG -np 2 "$rec" "$tmp/w"
grep -q "warning: mpirun's command line does not pass PROPHET_GATE" "$tmp/out" ||
    fail "no warning for PROPHET_GATE left out of mpirun's -x list"
grep -q "does not pass PROPHET_LOG\|does not pass LD_PRELOAD" "$tmp/out" &&
    fail "a warning for a variable that -x names"
PROPHET_GATE=observe launch srun-knobs "$run" "$tmp/bin/srun" --export=LD_PRELOAD -n 2 "$rec" "$tmp/w"
grep -q "warning: srun's command line does not pass PROPHET_GATE" "$tmp/out" ||
    fail "no warning for PROPHET_GATE left out of srun --export"
PROPHET_GATE=observe launch srun-all "$run" "$tmp/bin/srun" --export=ALL -n 2 "$rec" "$tmp/w"
grep -q "warning" "$tmp/out" && fail "a warning under srun --export=ALL"
echo "knobs on every rank: ok (a PROPHET_* variable the launcher drops is warned about)"

# Slurm: srun --export=ALL (the default) forwards everything; a list forwards what it names.
launch srun-all "$run" "$fl" srun --export=ALL -n 2 "$rec" "$tmp/w"
worker_has srun-all "mapped=$lib"
launch srun-list "$run" --observe "$fl" srun --export=LD_PRELOAD -n 2 "$rec" "$tmp/w"
worker_has srun-list "mapped=$lib"
worker_lacks srun-list "^PROPHET_"
echo "srun: ok"

# prophet-run called through a link elsewhere (e.g. /usr/local/bin -> the install prefix)
mkdir -p "$tmp/bin" && ln -s "$(cd "$(dirname "$run")" && pwd -P)/prophet-run" "$tmp/bin/prophet-run"
launch link "$tmp/bin/prophet-run" "$fl" horovodrun -np 2 "$rec" "$tmp/w"
worker_has link "mapped=$lib"
echo "through a link: ok"

# The emulated job: intercepted on every rank, observe-only, logs written.
env LD_LIBRARY_PATH="$build/lib/emu" PROPHET_DEBUG=INFO \
    "$run" --observe --log "$tmp/joblogs" "$build/bin/prophet-emu" --timeout 60 --quiet --ranks 2 \
    --profile "$here/../../profiles/resnet50.json" --mode ddp --iters 30 --scale 0.05 \
    --elements-scale 0.01 >"$tmp/out" 2>&1 || fail "the emulated job failed under prophet-run"
[ "$(grep -c 'prophet: .*INFO active: .*gate observe' "$tmp/out")" -eq 2 ] ||
    fail "not every rank active in observe-only (gate observe) mode"
[ "$(grep -c 'prophet: .*INFO summary comm .*calls=[1-9]' "$tmp/out")" -eq 2 ] || fail "calls not intercepted"
[ "$(ls "$tmp/joblogs" | wc -l)" -ge 2 ] || fail "no schedule log per rank in --log DIR"
echo "emulated job: ok"

# --help reads as a manual page; usage errors; a prophet-run away from its libprophet.so.
"$run" --help | grep -q "^SYNOPSIS" || fail "--help has no SYNOPSIS"
"$run" --bogus true >/dev/null 2>&1; [ $? -eq 2 ] || fail "an unknown option is not a usage error"
cp "$run" "$tmp/prophet-run"
"$tmp/prophet-run" true 2>"$tmp/out"; [ $? -eq 127 ] || fail "no error without libprophet.so"
grep -q "libprophet.so not found" "$tmp/out" || fail "no message without libprophet.so"
echo "PASS"
