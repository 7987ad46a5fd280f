#!/usr/bin/env bash
# The demo: sets up, builds, and runs an emulated 4-rank data-parallel training job (ResNet-50's
# real gradient profile, PyTorch-DDP-like buckets — here per-tensor hooks by default, which gives
# Prophet the most to regroup — over real TCP sockets paced to a 1 Gbit/s link per rank) twice:
# without the preload, and with LD_PRELOAD=build/lib/libprophet.so. Every PROPHET_* knob is at its
# default (the default mode holds completions and regroups; PROPHET_DEBUG and PROPHET_LOG only
# report) and prophet-emu's default warm-up (1 iteration). Prints the median iteration times over every iteration (learning,
# measuring and agreeing a plan included) and over the iterations after the first 50, the speedup,
# and what the scheduler did. Takes about a minute.
#   scripts/demo.sh [--mode per-tensor|ddp] [--ranks N] [--profile NAME] [--bw 1Gbit] [--iters K]
set -euo pipefail
cd "$(dirname "$0")/.."
mode=per-tensor; ranks=4; profile=resnet50; bw=1Gbit; iters=130; warmup=1; settled=50; latency=300
while [ $# -gt 0 ]; do
  case "$1" in
    --mode) mode=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --profile) profile=$2; shift 2 ;;
    --bw) bw=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "demo: unknown option $1" >&2; exit 2 ;;
  esac
done
bash scripts/setup.sh
echo "demo: building (build/)"
cmake -S . -B build >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
export LD_LIBRARY_PATH=$PWD/build/lib/emu EMU_NCCL_BW=$bw EMU_NCCL_LATENCY_US=$latency
out=$(mktemp -d)
run() { # name, extra env...
  local name=$1; shift
  env "$@" build/bin/prophet-emu --ranks "$ranks" --profile "profiles/$profile.json" --mode "$mode" \
    --iters "$iters" --warmup "$warmup" --wait all --scale 0.5 --elements-scale 0.05 \
    --json "$out/$name.json" --quiet 2>"$out/$name.err" \
    || { cat "$out/$name.err" >&2; exit 1; }
}
echo "demo: $ranks ranks, $profile, mode $mode, link $bw per rank, latency ${latency}us, $iters iterations"
run baseline
# default knobs (PROPHET_DEBUG and PROPHET_LOG only report)
run prophet LD_PRELOAD="$PWD/build/lib/libprophet.so" PROPHET_DEBUG=INFO \
  PROPHET_LOG="$out/log"
python3 - "$out" "$settled" <<'EOP'
import json, statistics, sys, os
d = sys.argv[1]
settled = int(sys.argv[2])
def med(n):
    j = json.load(open(os.path.join(d, n + ".json")))
    its = j["iteration_us"]  # prophet-emu's measured iterations (after its warm-up)
    return statistics.median(its), statistics.median(its[settled:] or its), len(its), j
b, bs, n, bj = med("baseline"); p, ps, _, pj = med("prophet")
print(f"  without the preload : {b/1e3:8.1f} ms per iteration ({bj['calls_per_iter']} all-reduces)")
print(f"  with Prophet        : {p/1e3:8.1f} ms per iteration   (default knobs)")
print(f"  speedup             : {b/p:8.2f}x   (median of all {n} iterations, learning included; "
      f"results checked exactly on every rank, every iteration)")
print(f"  after the first {settled} iterations: {bs/1e3:.1f} ms vs {ps/1e3:.1f} ms, {bs/ps:.2f}x")
EOP
grep -h "prophet: .*INFO" "$out/prophet.err" | grep -E "plan v[0-9]+ agreed" | tail -1 | sed 's/^/  /'
grep -h "prophet: .*INFO summary" "$out/prophet.err" | head -1 | sed 's/^/  /'
echo "demo: schedule logs in $out/log (prophet-report $out/log)"
