#!/bin/sh
# CPU cost of the eBPF throughput probe: CPU time (user+system of the sender and the receiver) of a
# paced loopback TCP transfer, with and without the probe attached, runs alternated.
# Long (about 2 * RUNS * SECONDS * number of chunk sizes seconds); not in CI. Needs root.
#   scripts/bpf-cost.sh [BUILD_DIR]   env: RATE (B/s, 1e9) SECONDS (3) RUNS (3) CHUNKS ("65536 8192")
set -eu
build=${1:-$(dirname "$0")/../build}
bw=$build/test/bpf/bw_traffic
bwmon=$build/bin/prophet-bwmon
rate=${RATE:-1000000000} secs=${SECONDS_PER_RUN:-3} runs=${RUNS:-3} chunks=${CHUNKS:-"65536 8192"}
[ "$(id -u)" = 0 ] || { echo "bpf-cost.sh: needs root" >&2; exit 77; }
[ -x "$bw" ] && [ -x "$bwmon" ] || { echo "bpf-cost.sh: build bw_traffic and prophet-bwmon in $build first" >&2; exit 2; }
grep -q " /sys/fs/bpf bpf " /proc/mounts || mount -t bpf bpf /sys/fs/bpf
pin=/sys/fs/bpf/prophet-cost-$$
dpid=
trap '[ -n "$dpid" ] && kill $dpid 2>/dev/null; wait 2>/dev/null; rm -rf "$pin"' EXIT

probe_on() {
    "$bwmon" --daemon --pin "$pin" --no-shm 2>/dev/null &
    dpid=$!
    while [ ! -e "$pin/prophet_host" ]; do sleep 0.05; done
}
probe_off() { kill "$dpid"; wait "$dpid" || true; dpid=; }
add() { awk -v a="$1" -v b="$2" 'BEGIN { print a + b }'; }
field() { echo "$1" | tr ' ' '\n' | awk -v k="$2" 'f { print; exit } $0 == k { f = 1 }'; }

echo "rate $rate B/s, $secs s a run, $runs runs each; cpu = user+sys of sender and receiver"
for chunk in $chunks; do
    off=0 on=0 calls=0 mb_off=0 mb_on=0
    for i in $(seq "$runs"); do
        a=$("$bw" gen --rate "$rate" --seconds "$secs" --chunk "$chunk")
        probe_on
        b=$("$bw" gen --rate "$rate" --seconds "$secs" --chunk "$chunk")
        probe_off
        echo "  chunk $chunk run $i  off: $a"
        echo "  chunk $chunk run $i  on:  $b"
        off=$(add "$off" "$(field "$a" cpu_s)")
        on=$(add "$on" "$(field "$b" cpu_s)")
        mb_off=$(add "$mb_off" "$(field "$a" rate_MBps)")
        mb_on=$(add "$mb_on" "$(field "$b" rate_MBps)")
        calls=$(field "$b" send_calls)
    done
    awk -v off="$off" -v on="$on" -v runs="$runs" -v secs="$secs" -v chunk="$chunk" \
        -v calls="$calls" -v mboff="$mb_off" -v mbon="$mb_on" 'BEGIN {
        printf "chunk %6d B: %.0f / %.0f MB/s off/on; CPU %.3f s off, %.3f s on per run (%.1f%% / %.1f%% of one core): %+.2f%%",
               chunk, mboff / runs, mbon / runs, off / runs, on / runs, 100 * off / runs / secs, 100 * on / runs / secs,
               100 * (on / off - 1)
        printf "; %+.0f ns per send call (sends %d a run, receives extra)\n", 1e9 * (on - off) / runs / calls, calls
    }'
done

# The probe's own run time per invocation, from the kernel's BPF statistics.
old=$(cat /proc/sys/kernel/bpf_stats_enabled)
echo 1 > /proc/sys/kernel/bpf_stats_enabled
probe_on
for chunk in $chunks; do
    before=$(bpftool prog show | awk '/prophet_raw_|prophet_tp_/ { for (i = 1; i < NF; i++) { if ($i == "run_time_ns") t += $(i+1); if ($i == "run_cnt") c += $(i+1) } } END { print t + 0, c + 0 }')
    "$bw" gen --rate "$rate" --seconds "$secs" --chunk "$chunk" > /dev/null
    after=$(bpftool prog show | awk '/prophet_raw_|prophet_tp_/ { for (i = 1; i < NF; i++) { if ($i == "run_time_ns") t += $(i+1); if ($i == "run_cnt") c += $(i+1) } } END { print t + 0, c + 0 }')
    echo "$before $after" | awk -v chunk="$chunk" -v secs="$secs" '{
        t = $3 - $1; c = $4 - $2
        printf "chunk %6d B: probe ran %d times, %.0f ns each, %.2f%% of one core\n", chunk, c, c ? t / c : 0, 100 * t / 1e9 / secs }'
done
probe_off
echo "$old" > /proc/sys/kernel/bpf_stats_enabled
