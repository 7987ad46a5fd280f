#!/bin/sh
# log.report_job: a short emulated 8-rank DDP job under libprophet.so (PROPHET_LOG and
# PROPHET_TRACE set), then report_suite.py job: prophet-report's job summary checked against the
# per-rank logs (DIR argument, trace files skipped, a bad log named, the step mapping, the
# trial/kept marks in text, SVG and trace, --json).
# usage: report_job.sh PROPHET_EMU LIBPROPHET EMU_LIBDIR PROPHET_REPORT SCHEMA PROFILE OUTDIR [PYTHON3]
set -eu
emu=$1 lib=$2 emulib=$3 report=$4 schema=$5 profile=$6 out=$7 py=${8:-python3}
here=$(cd "$(dirname "$0")" && pwd)
warmup=1 iters=36
rm -rf "$out"
mkdir -p "$out/logs"
# 36 steps: the first plans (trial round 1: passthrough, then prophet) are agreed from step 25
EMU_NCCL_BW=4Gbit LD_LIBRARY_PATH="$emulib" LD_PRELOAD="$lib" PROPHET_LOG="$out/logs" \
    PROPHET_TRACE=1 PROPHET_LOG_ITERS=0:1000 PROPHET_LEARN_ITERS=3 \
    "$emu" --ranks 8 --profile "$profile" --mode ddp --iters $iters --warmup $warmup \
    --scale 0.01 --elements-scale 0.01 --timeout 120 --quiet
exec "$py" "$here/report_suite.py" job "$report" "$schema" "$out/logs" "$out" \
    $((warmup + iters - 1))
