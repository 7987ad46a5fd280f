#!/bin/sh
# preload.cuda_table: runs cuda_table (under the preload) and checks its list against the emulated
# driver's exports: an entry is "wrapper" exactly when the driver exports it, "missing" otherwise;
# the missing wrapper called anyway warns once and returns CUDA_ERROR_NOT_FOUND.
#   cuda_table.sh PROGRAM PRELOAD DRIVER
set -u
prog=$1 lib=$2 drv=$3
out=$(mktemp) && trap 'rm -f "$out"' EXIT
LD_PRELOAD="${PRELOAD_PREFIX:-}${PRELOAD_PREFIX:+ }$lib" "$prog" >"$out" 2>&1; rc=$?; [ $rc -eq 0 ] ||
    { cat "$out"; echo "FAIL: cuda_table exited $rc"; exit 1; }
nm -D --defined-only "$drv" | awk '{print $3}' >"$out.exports"
n=$(grep -Ec ' (wrapper|missing)$' "$out")
bad=$(awk 'NR == FNR { exp[$1] = 1; next }
           $2 == "wrapper" || $2 == "missing" {
               want = ($1 in exp) ? "wrapper" : "missing"
               if ($2 != want) { print "FAIL: " $1 ": " $2 ", the driver says " want; bad = 1 }
           }' "$out.exports" "$out")
rm -f "$out.exports"
[ -z "$bad" ] || { echo "$bad"; exit 1; }
[ "$n" -gt 100 ] || { cat "$out"; echo "FAIL: only $n entries listed"; exit 1; }
grep -q '^table: ' "$out" || { cat "$out"; echo "FAIL: no summary"; exit 1; }
w=$(grep -c 'prophet: .*WARN .*cuMemAllocAsync is not in the CUDA driver: CUDA_ERROR_NOT_FOUND' "$out")
[ "$w" -eq 1 ] || { cat "$out"; echo "FAIL: $w WARN lines for cuMemAllocAsync (want 1)"; exit 1; }
grep '^table: ' "$out"
echo PASS
