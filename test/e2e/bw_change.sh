#!/bin/sh
# A link that changes speed mid-run (issue 12, item 5): prophet-emu runs a per-tensor ResNet-50 job
# at 1 Gbit/s and sets its links to 250 Mbit/s at a given iteration (--bw-change-at); the preload
# runs in its default mode with the in-process eBPF probe (root). Checks: the job is exact, the
# trials ran alike on every rank and add up (check_plan.py trials), the probe saw the change, and
# a new trial round's plan was in force within BOUND iterations (check_bw_change.py, which prints
# the iteration at which the plan changed; the preload's iteration at the change is found from the
# job's, through prophet-emu's --json iteration times, since a passthrough plan logs only sampled
# iterations). A trial round still running at the change makes the run inconclusive (its plan
# changes every few iterations anyway): the job is run again with the change later, up to 5 times
# (on the 2-core CI machine a noise-triggered round covered the change in 3 runs out of 3 once).
# The job moves 5 MB a step (--elements-scale 0.05): the link's change must be one the job feels
# beyond its noise. With 2 MB (0.02) the job used 35-55 MB/s of the 125 before the change, so the
# slower link raised its iteration time by only ~40% and its eBPF throughput fell to 0.6-0.75x,
# both near the loop's drift thresholds (25% and 30%, against baselines of 5 samples that
# single iterations of 35-124 ms move): 2 of 22 runs saw no drift within the bound.
# usage: bw_change.sh BUILD PROFILE BOUND
set -u
build=$1 profile=$2 bound=$3
here=$(dirname "$0")
out=$(mktemp) || exit 1
logs=$(mktemp -d) || exit 1
trap 'rm -rf "$out" "$logs"' EXIT
for at in 150 190 230 270 310; do
    rm -rf "$logs"/*
    iters=$((at + 60))
    env LD_LIBRARY_PATH="$build/lib/emu" LD_PRELOAD="$build/lib/libprophet.so" \
        PROPHET_LOG="$logs" PROPHET_LOG_ITERS=0:1000000 PROPHET_DEBUG=INFO PROPHET_BWMON=process \
        EMU_NCCL_BW=1Gbit \
        "$build/bin/prophet-emu" --timeout 240 --quiet --ranks 2 --profile "$profile" \
        --mode per-tensor --iters "$iters" --scale 0.05 --elements-scale 0.05 \
        --bw-change-at "$at:250" --json "$logs/emu.json" >"$out" 2>&1
    rc=$?
    if [ $rc -ne 0 ]; then
        echo "FAIL: prophet-emu exited $rc"; tail -n 40 "$out"; exit 1
    fi
    grep -q "eBPF throughput from" "$out" || { echo "FAIL: no eBPF probe"; grep "prophet:" "$out" | head; exit 1; }
    python3 "$here/check_plan.py" "$logs" 2 trials || exit 1
    t=$(sed -n 's/^prophet-emu: rank 0: links at .* (t=\([0-9]*\) us CLOCK_MONOTONIC)$/\1/p' "$out")
    [ -n "$t" ] || { echo "FAIL: prophet-emu did not change the links"; exit 1; }
    python3 "$here/check_bw_change.py" "$logs" "$logs/emu.json" "$at" "$t" "$bound"
    rc=$?
    case $rc in
    0) grep "prophet: .*INFO comm 0: .* drifted since the choice" "$out" | head -n 1
       echo "PASS (job iteration $at)"; exit 0 ;;
    3) continue ;;
    *) grep -E "prophet: .*INFO comm 0 iteration .*trial round|drifted" "$out" | awk '!s[$0]++' | tail -n 20
       exit 1 ;;
    esac
done
echo "FAIL: inconclusive 5 times (a trial round was running at every change: a machine too noisy)"
exit 1
