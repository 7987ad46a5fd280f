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
# Each run also reports the CPU seconds (user + system) of the job's processes, from /usr/bin/time:
# on a host whose cores the ranks share, CPU time reads a cost that the wall clock's noise hides.
# Long (ROUNDS x 5 runs); not in CI. Needs root (the probe). docs/benchmarks.md, issue 12's sweep.
#   scripts/probe-job-cost.sh [BUILD_DIR]
#   env: MODE (per-param-sync) PROFILE (resnet50) RANKS (4) BW (1Gbit) ROUNDS (3) ITERS (80) WARMUP (40)
#        COLUMNS (none shared process daemon off: which columns run, in this order)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
emu_build=$build
. "$root/scripts/emu-job.sh"
mode=${MODE:-per-param-sync} profile=${PROFILE:-resnet50} ranks=${RANKS:-4} bw=${BW:-1Gbit}
rounds=${ROUNDS:-3} iters=${ITERS:-80} warmup=${WARMUP:-40}
columns=${COLUMNS:-none shared process daemon off}
[ "$(id -u)" = 0 ] || { echo "probe-job-cost.sh: needs root" >&2; exit 77; }
grep -q " /sys/fs/bpf bpf " /proc/mounts || mount -t bpf bpf /sys/fs/bpf
work=$(mktemp -d) pin=/sys/fs/bpf/prophet-jobcost-$$ spin=/sys/fs/bpf/prophet-jobcost-shared-$$ dpid=
trap '[ -n "$dpid" ] && kill $dpid 2>/dev/null; wait 2>/dev/null; rm -rf "$work" "$pin" "$spin"' EXIT
extra=
[ "$mode" = ddp-view ] && mode=ddp && extra=--bucket-view

run() { # column, then its environment
    col=$1
    shift
    emu_job "$work/$col.json" "$work/$col.err" "$work/$col.time" "$@" ||
        { echo "probe-job-cost.sh: $col failed:" >&2; tail -5 "$work/$col.err" >&2; exit 1; }
    python3 -c "import json, statistics, sys
it = json.load(open(sys.argv[1]))['iteration_us'][int(sys.argv[2]):]
cpu = sum(float(x) for x in open(sys.argv[4]).read().split()[-4:-2])
print(sys.argv[3], round(statistics.median(it) / 1e3, 2), round(cpu, 2))" "$work/$col.json" "$warmup" \
        "$col" "$work/$col.time" |
        tee -a "$work/results"
}

pre="LD_PRELOAD=$build/lib/libprophet.so PROPHET_POLICY=passthrough"
echo "$profile $mode${extra:+ (bucket view)}, $ranks ranks, $bw, $((warmup + iters)) iterations a run (prophet-emu --warmup $warmup --iters $iters), the median of the last $((iters - warmup)); ms"
column() { # one run of the named column
    case $1 in
    none) run none X=1 ;;
    shared) run shared $pre PROPHET_BWMON=shared PROPHET_BWMON_PIN="$spin" ;;
    process) run process $pre PROPHET_BWMON=process ;;
    daemon)
        "$build/bin/prophet-bwmon" --daemon --pin "$pin" --no-shm 2>/dev/null &
        dpid=$!
        while [ ! -e "$pin/prophet_host" ]; do sleep 0.05; done
        run daemon $pre PROPHET_BWMON=daemon PROPHET_BWMON_PIN="$pin"
        kill "$dpid"
        wait "$dpid" || true
        dpid=
        ;;
    off) run off $pre PROPHET_BWMON=off ;;
    *) echo "probe-job-cost.sh: unknown column '$1' (none shared process daemon off)" >&2; exit 2 ;;
    esac
}

for r in $(seq "$rounds"); do
    echo "round $r"
    for col in $columns; do column "$col"; done
done
python3 -c "import collections, statistics, sys
ms, cpu = collections.defaultdict(list), collections.defaultdict(list)
for line in open(sys.argv[1]):
    k, v, c = line.split()
    ms[k].append(float(v))
    cpu[k].append(float(c))
ref = next(iter(ms))  # the first column, none unless COLUMNS says otherwise
for k in ms:
    m, c = statistics.median(ms[k]), statistics.median(cpu[k])
    print(f'{k:8} median {m:7.2f} ms  {m / statistics.median(ms[ref]):.3f} of {ref}  runs {ms[k]}')
    print(f'{\"\":8} CPU    {c:7.2f} s   {c / statistics.median(cpu[ref]):.3f} of {ref}  runs {cpu[k]}')
" "$work/results"
