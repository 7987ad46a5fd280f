#!/bin/sh
# What the eBPF throughput probe costs an emulated job that the preload does not regroup
# (PROPHET_POLICY=passthrough): interleaved rounds of four columns on prophet-emu, run as
# scripts/bench.py runs it, each the median iteration time after the warm-up:
#   none      no preload
#   shared    passthrough, one probe for the host that the first rank loads (PROPHET_BWMON=shared,
#             what the default `auto` picks when no prophet-bwmon runs)
#   process   passthrough, every rank loading its own probe (PROPHET_BWMON=process)
#   daemon    passthrough, one probe for the host: prophet-bwmon --daemon, started for the run
#   off       passthrough, no probe (PROPHET_BWMON=off)
# Long (ROUNDS x 5 runs); not in CI. Needs root (the probe). docs/benchmarks.md, issue 12's sweep.
#   scripts/probe-job-cost.sh [BUILD_DIR]
#   env: MODE (per-param-sync) PROFILE (resnet50) RANKS (4) BW (1Gbit) ROUNDS (3) ITERS (80) WARMUP (40)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
mode=${MODE:-per-param-sync} profile=${PROFILE:-resnet50} ranks=${RANKS:-4} bw=${BW:-1Gbit}
rounds=${ROUNDS:-3} iters=${ITERS:-80} warmup=${WARMUP:-40}
[ "$(id -u)" = 0 ] || { echo "probe-job-cost.sh: needs root" >&2; exit 77; }
grep -q " /sys/fs/bpf bpf " /proc/mounts || mount -t bpf bpf /sys/fs/bpf
work=$(mktemp -d) pin=/sys/fs/bpf/prophet-jobcost-$$ spin=/sys/fs/bpf/prophet-jobcost-shared-$$ dpid=
trap '[ -n "$dpid" ] && kill $dpid 2>/dev/null; wait 2>/dev/null; rm -rf "$work" "$pin" "$spin"' EXIT
extra=
[ "$mode" = ddp-view ] && mode=ddp && extra=--bucket-view

run() { # column, then its environment
    col=$1
    shift
    env LD_LIBRARY_PATH="$build/lib/emu" EMU_NCCL_BW="$bw" EMU_NCCL_LATENCY_US=0 "$@" \
        "$build/bin/prophet-emu" --ranks "$ranks" --profile "$root/profiles/$profile.json" \
        --mode "$mode" $extra --iters "$iters" --warmup "$warmup" --wait all \
        --json "$work/$col.json" --quiet --scale 0.5 --elements-scale 0.05 2>"$work/$col.err" ||
        { echo "probe-job-cost.sh: $col failed:" >&2; tail -5 "$work/$col.err" >&2; exit 1; }
    python3 -c "import json, statistics, sys
it = json.load(open(sys.argv[1]))['iteration_us'][int(sys.argv[2]):]
print(sys.argv[3], round(statistics.median(it) / 1e3, 2))" "$work/$col.json" "$warmup" "$col" |
        tee -a "$work/results"
}

pre="LD_PRELOAD=$build/lib/libprophet.so PROPHET_POLICY=passthrough"
echo "$profile $mode${extra:+ (bucket view)}, $ranks ranks, $bw, $((warmup + iters)) iterations a run (prophet-emu --warmup $warmup --iters $iters), the median of the last $((iters - warmup)); ms"
for r in $(seq "$rounds"); do
    echo "round $r"
    run none X=1
    run shared $pre PROPHET_BWMON=shared PROPHET_BWMON_PIN="$spin"
    run process $pre PROPHET_BWMON=process
    "$build/bin/prophet-bwmon" --daemon --pin "$pin" --no-shm 2>/dev/null &
    dpid=$!
    while [ ! -e "$pin/prophet_host" ]; do sleep 0.05; done
    run daemon $pre PROPHET_BWMON=daemon PROPHET_BWMON_PIN="$pin"
    kill "$dpid"
    wait "$dpid" || true
    dpid=
    run off $pre PROPHET_BWMON=off
done
python3 -c "import collections, statistics, sys
d = collections.defaultdict(list)
for line in open(sys.argv[1]):
    k, v = line.split()
    d[k].append(float(v))
for k, v in d.items():
    print(f'{k:8} median {statistics.median(v):7.2f} ms  {statistics.median(v) / statistics.median(d[\"none\"]):.3f} of none  runs {v}')
" "$work/results"
