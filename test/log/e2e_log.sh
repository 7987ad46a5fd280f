#!/bin/sh
# log.e2e: an emulated 2-rank job under libprophet.so with PROPHET_LOG and PROPHET_TRACE set; the
# real logs must validate against docs/log-schema.json, the live traces must be valid, and
# prophet-report must read the logs (text, --json, --svg, --trace).
# usage: e2e_log.sh PROPHET_EMU LIBPROPHET EMU_LIBDIR PROPHET_REPORT SCHEMA PROFILE OUTDIR [PYTHON3]
set -eu
emu=$1 lib=$2 emulib=$3 report=$4 schema=$5 profile=$6 out=$7 py=${8:-python3}
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$out"
mkdir -p "$out"
echo "log.e2e: running prophet-emu (2 ranks, per-tensor) under the preload"
LD_LIBRARY_PATH="$emulib" LD_PRELOAD="$lib" PROPHET_LOG="$out" PROPHET_TRACE=1 \
    PROPHET_LOG_ITERS=0:1000 PROPHET_LEARN_ITERS=3 PROPHET_REPLAN_ITERS=5 \
    "$emu" --ranks 2 --profile "$profile" --mode per-tensor --iters 16 --warmup 1 \
    --scale 0.05 --elements-scale 0.01 --timeout 120 --quiet
for r in 0 1; do
    log="$out/prophet-rank$r.json"
    test -s "$log" || { echo "FAIL: $log missing"; exit 1; }
    "$py" "$here/validate_log.py" "$schema" "$log" --require-complete --min-iterations 10
    "$py" "$here/check_trace.py" "$out/prophet-rank$r.trace.json"
done
"$report" "$out/prophet-rank0.json" "$out/prophet-rank1.json"
# the directory, as PROPHET_LOG names it (the live traces in it are skipped)
"$report" --per-rank "$out" | grep -q "^job: 2 of 2 ranks logged" || { echo "FAIL: DIR"; exit 1; }
"$report" --json "$out/prophet-rank0.json" "$out/prophet-rank1.json" > "$out/summary.json"
"$py" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d["logs"])==2; \
assert d["logs"][0]["iteration_time_us"]["median"] > 0, "no iteration time"' "$out/summary.json"
"$report" --svg "$out/iteration.svg" --trace "$out/job.trace.json" \
    "$out/prophet-rank0.json" "$out/prophet-rank1.json"
"$py" -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' "$out/iteration.svg"
"$py" "$here/check_trace.py" "$out/job.trace.json"
echo "log.e2e: ok"
