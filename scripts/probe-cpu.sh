#!/bin/sh
# CPU time the eBPF throughput probe's programs take in an emulated job, exactly: the kernel's own
# per-program statistics (sysctl kernel.bpf_stats_enabled=1: run_time_ns and run_cnt, read with
# bpftool while the job runs), for each probe source in turn:
#   shared    one probe for the host, loaded by the first rank (PROPHET_BWMON=shared; the default
#             `auto` picks it when no prophet-bwmon runs)
#   process   a probe per rank (PROPHET_BWMON=process)
# The job runs under PROPHET_POLICY=passthrough, as scripts/probe-job-cost.sh runs it. Prints, per
# source: programs, runs, ns per run, and milliseconds of CPU per job iteration (all ranks).
# Needs root and bpftool; not in CI.
#   scripts/probe-cpu.sh [BUILD_DIR]
#   env: MODE (per-param-sync) PROFILE (resnet50) RANKS (4) BW (1Gbit) ITERS (60) SOURCES (shared process)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
mode=${MODE:-per-param-sync} profile=${PROFILE:-resnet50} ranks=${RANKS:-4} bw=${BW:-1Gbit}
iters=${ITERS:-60} sources=${SOURCES:-shared process}
[ "$(id -u)" = 0 ] || { echo "probe-cpu.sh: needs root" >&2; exit 77; }
command -v bpftool >/dev/null || { echo "probe-cpu.sh: needs bpftool" >&2; exit 77; }
grep -q " /sys/fs/bpf bpf " /proc/mounts || mount -t bpf bpf /sys/fs/bpf
work=$(mktemp -d) pin=/sys/fs/bpf/prophet-probecpu-$$
was=$(sysctl -n kernel.bpf_stats_enabled)
trap 'sysctl -qw kernel.bpf_stats_enabled=$was; rm -rf "$work" "$pin"' EXIT
sysctl -qw kernel.bpf_stats_enabled=1
extra=
[ "$mode" = ddp-view ] && mode=ddp && extra=--bucket-view
echo "$profile $mode${extra:+ (bucket view)}, $ranks ranks, $bw, $iters iterations, passthrough"
for src in $sources; do
    env LD_LIBRARY_PATH="$build/lib/emu" LD_PRELOAD="$build/lib/libprophet.so" \
        PROPHET_POLICY=passthrough PROPHET_BWMON="$src" PROPHET_BWMON_PIN="$pin" \
        EMU_NCCL_BW="$bw" EMU_NCCL_LATENCY_US=0 \
        "$build/bin/prophet-emu" --ranks "$ranks" --profile "$root/profiles/$profile.json" \
        --mode "$mode" $extra --iters "$iters" --warmup 0 --wait all --json "$work/$src.json" \
        --quiet --scale 0.5 --elements-scale 0.05 2>"$work/$src.err" &
    job=$!
    : >"$work/$src.stats"
    # the programs go with the ranks: sample their counters every 0.2 s until the job ends, keep
    # the last (the final 0.2 s are not counted)
    while kill -0 "$job" 2>/dev/null; do
        bpftool prog show --json >>"$work/$src.stats" 2>/dev/null || true
        echo >>"$work/$src.stats"
        sleep 0.2
    done
    wait "$job" || { echo "probe-cpu.sh: the $src job failed:" >&2; tail -5 "$work/$src.err" >&2; exit 1; }
    rm -rf "$pin"
    python3 - "$work/$src.stats" "$work/$src.json" "$src" <<'PY'
import json, sys
last = {}
for line in open(sys.argv[1]):
    line = line.strip()
    if not line:
        continue
    for p in json.loads(line):
        if p.get("name", "").startswith("prophet_"):
            v = (p.get("run_cnt", 0), p.get("run_time_ns", 0))
            last[p["id"]] = max(last.get(p["id"], v), v)
runs = sum(v[0] for v in last.values())
ns = sum(v[1] for v in last.values())
n = len(json.load(open(sys.argv[2]))["iteration_us"])
print(f"{sys.argv[3]:8} programs {len(last)}  runs {runs}  ns/run {ns / max(runs, 1):.0f}  "
      f"CPU {ns / 1e6 / n:.2f} ms per iteration ({n} iterations)")
PY
done
