#!/bin/sh
# log-cost.sh: the cost of the schedule log (PROPHET_LOG, optionally PROPHET_TRACE=1) on the
# iteration time of an emulated job. Runs the same prophet-emu job under libprophet.so with and
# without PROPHET_LOG, alternating, RUNS times each, and prints the median of the per-run median
# iteration times and the relative difference (goal: under 1%).
# usage: scripts/log-cost.sh [BUILD_DIR] [RUNS]
#   env: PROFILE (profiles/resnet50.json), MODE (per-tensor), RANKS (2), ITERS (40),
#        SCALE (0.2), ELEMENTS_SCALE (0.01), TRACE (0: 1 adds PROPHET_TRACE=1)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
runs=${2:-5}
profile=${PROFILE:-$root/profiles/resnet50.json}
mode=${MODE:-per-tensor}
ranks=${RANKS:-2}
iters=${ITERS:-40}
scale=${SCALE:-0.2}
escale=${ELEMENTS_SCALE:-0.01}
trace=${TRACE:-0}
emu=$build/bin/prophet-emu
lib=$build/lib/libprophet.so
for f in "$emu" "$lib" "$build/lib/emu"; do
    test -e "$f" || { echo "log-cost.sh: $f not found (build prophet and prophet-emu first)" >&2; exit 2; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

one_run() { # $1: with|without, $2: run number -> prints the run's median iteration time (us)
    out="$tmp/$1-$2.json"
    if [ "$1" = with ]; then
        mkdir -p "$tmp/logs-$2"
        env PROPHET_LOG="$tmp/logs-$2" PROPHET_LOG_ITERS=0:100000 PROPHET_TRACE="$trace" \
            LD_LIBRARY_PATH="$build/lib/emu" LD_PRELOAD="$lib" "$emu" --ranks "$ranks" \
            --profile "$profile" --mode "$mode" --iters "$iters" --scale "$scale" \
            --elements-scale "$escale" --quiet --json "$out"
    else
        env -u PROPHET_LOG LD_LIBRARY_PATH="$build/lib/emu" LD_PRELOAD="$lib" "$emu" \
            --ranks "$ranks" --profile "$profile" --mode "$mode" --iters "$iters" \
            --scale "$scale" --elements-scale "$escale" --quiet --json "$out"
    fi
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["median_us"])' "$out"
}

without="" with=""
i=1
while [ "$i" -le "$runs" ]; do
    without="$without $(one_run without "$i")"
    with="$with $(one_run with "$i")"
    i=$((i + 1))
done
python3 - "$without" "$with" "$mode" "$ranks" "$iters" "$trace" <<'PY'
import statistics, sys
a = [float(x) for x in sys.argv[1].split()]
b = [float(x) for x in sys.argv[2].split()]
ma, mb = statistics.median(a), statistics.median(b)
print("job: prophet-emu --mode %s --ranks %s --iters %s, %d runs each%s"
      % (sys.argv[3], sys.argv[4], sys.argv[5], len(a), ", PROPHET_TRACE=1" if sys.argv[6] == "1" else ""))
print("without PROPHET_LOG: median iteration %.1f us  (runs: %s)" % (ma, " ".join("%.0f" % x for x in a)))
print("with    PROPHET_LOG: median iteration %.1f us  (runs: %s)" % (mb, " ".join("%.0f" % x for x in b)))
pairs = [y - x for x, y in zip(a, b)]
q = statistics.quantiles(a, n=4) if len(a) >= 2 else [ma, ma, ma]
print("logging cost: %+.1f us per iteration (%+.2f%%); median of paired differences %+.1f us"
      % (mb - ma, 100 * (mb - ma) / ma, statistics.median(pairs)))
print("run-to-run noise without the log: interquartile range %.1f us (%.1f%% of the median)"
      % (q[2] - q[0], 100 * (q[2] - q[0]) / ma))
PY
