#!/bin/bash
# CPU time and iteration time of one emulated job under several builds of libprophet.so (and
# without the preload), the runs interleaved round by round. Each run is prophet-emu as
# scripts/bench.py runs the default column (every PROPHET_* knob at its default but
# PROPHET_DEBUG=INFO), timed by /usr/bin/time: wall seconds, user and system CPU seconds of all
# its processes, voluntary and involuntary context switches; then the median iteration after the
# warm-up and the plan the closed loop kept. On a host whose cores the ranks share, the CPU
# seconds and the switches read a cost that the wall clock's noise hides. Long; not in CI.
#   scripts/preload-cpu.sh NAME=BUILD_DIR [NAME=BUILD_DIR ...]
#   env: PROFILE (resnet50) MODE (per-tensor) RANKS (4) BW (1Gbit) ITERS (170) WARMUP (130)
#        ROUNDS (3) NONE (1: also a column without the preload) EMU_BUILD (build: the emulator)
# e.g. (docs/benchmarks.md, 'The readiness poller's period while calls are held'):
#   RANKS=8 NONE=0 scripts/preload-cpu.sh before=/tmp/before after=build
set -eu
[ $# -gt 0 ] || { sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
emu_build=$(cd "${EMU_BUILD:-$root/build}" && pwd)
. "$root/scripts/emu-job.sh"
profile=${PROFILE:-resnet50} mode=${MODE:-per-tensor} ranks=${RANKS:-4} bw=${BW:-1Gbit}
iters=${ITERS:-170} warmup=${WARMUP:-130} rounds=${ROUNDS:-3}
for v in "$@"; do
    [ -f "${v#*=}/lib/libprophet.so" ] || { echo "preload-cpu.sh: no ${v#*=}/lib/libprophet.so" >&2; exit 2; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
extra=
[ "$mode" = ddp-view ] && mode=ddp && extra=--bucket-view

run() { # name, then the run's environment
    name=$1
    shift
    emu_job "$work/run.json" "$work/err" "$work/time" "$@" ||
        { echo "preload-cpu.sh: $name failed:" >&2; tail -5 "$work/err" >&2; exit 1; }
    kept=$(grep -o "[a-z0-9-]* kept" "$work/err" | tail -n 1 | cut -d' ' -f1)
    python3 -c "import json, statistics, sys
it = json.load(open(sys.argv[1]))['iteration_us'][int(sys.argv[2]):]
w, u, s, vol, inv = open(sys.argv[3]).read().split()[-5:]
print(sys.argv[4], round(statistics.median(it) / 1e3, 1), w, round(float(u) + float(s), 2), vol, inv,
      sys.argv[5] or '-')" "$work/run.json" "$warmup" "$work/time" "$name" "$kept" | tee -a "$work/results"
}

echo "$profile $mode${extra:+ (bucket view)}, $ranks ranks, $bw, $((warmup + iters)) iterations a run, the median of the last $((iters - warmup))"
echo "columns: name, median ms, wall s, CPU s (user + system), voluntary and involuntary switches, plan kept"
for r in $(seq "$rounds"); do
    echo "round $r"
    [ "${NONE:-1}" = 1 ] && run none X=1
    for v in "$@"; do
        run "${v%%=*}" LD_PRELOAD="${v#*=}/lib/libprophet.so" PROPHET_DEBUG=INFO
    done
done
python3 -c "import collections, statistics, sys
d = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    d[f[0]].append([float(x) for x in f[1:6]])
for k, rows in d.items():
    med = [statistics.median(r[i] for r in rows) for i in range(5)]
    print(f'{k:10} median {med[0]:8.1f} ms  wall {med[1]:7.1f} s  CPU {med[2]:7.1f} s  '
          f'switches {med[3]:10.0f} voluntary {med[4]:9.0f} involuntary  ({len(rows)} runs)')
" "$work/results"
