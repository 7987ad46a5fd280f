#!/bin/sh
# Invariant 5 for eBPF: a libprophet.so whose plugin libprophet_bw.so (and so libbpf.so.1) cannot be
# loaded still runs the job: one INFO line says why, the bandwidth is fitted, results are exact.
set -u
build=$1 prof=$2
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
cp "$build/lib/libprophet.so" "$dir/" # no libprophet_bw.so beside it
out=$dir/out
env LD_LIBRARY_PATH="$build/lib/emu" LD_PRELOAD="$dir/libprophet.so" PROPHET_DEBUG=INFO \
    "$build/bin/prophet-emu" --ranks 2 --profile "$prof" --mode ddp --iters 12 --scale 0.05 \
    --elements-scale 0.01 --quiet >"$out" 2>&1
rc=$?
[ $rc -eq 0 ] || { echo "FAIL: prophet-emu exited $rc"; tail -20 "$out"; exit 1; }
grep -q "prophet: .*INFO no eBPF throughput (no eBPF support: .*libprophet_bw.so.*); using bandwidth fitted" "$out" ||
    { echo "FAIL: no fallback line"; grep prophet: "$out" | head; exit 1; }
grep -m1 "no eBPF throughput" "$out"
echo PASS
