#!/bin/sh
# preload.cudart_real: the real libcudart.so.13 under the preload (PROPHET_DEBUG=TRACE) against the
# emulated driver. Checks that the runtime's lookups reached the preload and were answered with its
# wrappers: dlsym(cuGetProcAddress_v2), the self-query "cuGetProcAddress", cuEventRecord with
# flags 0 and 2, cuStreamWaitEvent ...; and that no lookup of a wrapped name (the table's names)
# was answered with the driver's own function.
#   cudart_real.sh PROGRAM PRELOAD LIBCUDART TABLE
set -u
prog=$1 lib=$2 rt=$3 table=$4
out=$(mktemp) && trap 'rm -f "$out"' EXIT
PROPHET_DEBUG=TRACE LD_PRELOAD="${PRELOAD_PREFIX:-}${PRELOAD_PREFIX:+ }$lib" "$prog" "$rt" >"$out" 2>&1; rc=$?; [ $rc -eq 0 ] ||
    { cat "$out"; echo "FAIL: the program exited $rc"; exit 1; }
fail() { echo "FAIL: $*"; echo "---- output (head)"; head -n 20 "$out"; exit 1; }
for re in \
    'prophet: .*TRACE dlsym\(cuGetProcAddress_v2\): wrapper' \
    'cuGetProcAddress\(cuGetProcAddress, version [0-9]+, flags 0\): wrapper cuGetProcAddress_v2 ' \
    'cuGetProcAddress\(cuEventRecord, version [0-9]+, flags 0\): wrapper cuEventRecord ' \
    'cuGetProcAddress\(cuEventRecord, version [0-9]+, flags 2\): wrapper cuEventRecord_ptsz ' \
    'cuGetProcAddress\(cuStreamWaitEvent, version [0-9]+, flags 0\): wrapper cuStreamWaitEvent ' \
    'cuGetProcAddress\(cuStreamWaitEvent, version [0-9]+, flags 2\): wrapper cuStreamWaitEvent_ptsz ' \
    'cuGetProcAddress\(cuLaunchKernel, version [0-9]+, flags 2\): wrapper cuLaunchKernel_ptsz ' \
    'cuGetProcAddress\(cuStreamSynchronize, version [0-9]+, flags 2\): wrapper cuStreamSynchronize_ptsz '; do
    grep -Eq -- "$re" "$out" || fail "no line matching: $re"
done
# every name the table wraps, asked for and answered with the driver's own function: a gap
procs=$(sed -n 's/^ *H([A-Za-z0-9_]*, "\([A-Za-z0-9_]*\)".*/\1/p' "$table" | sort -u)
sed -n 's/.*cuGetProcAddress(\([A-Za-z0-9_]*\), .*: driver.s$/\1/p' "$out" | sort -u >"$out.drv"
gaps=$(echo "$procs" | grep -xF -f "$out.drv")
rm -f "$out.drv"
[ -z "$gaps" ] || fail "wrapped names answered with the driver's function: $gaps"
w=$(grep -c 'cuGetProcAddress(.*): wrapper' "$out")
d=$(grep -c 'cuGetProcAddress(.*): driver' "$out")
[ "$w" -ge 50 ] || fail "only $w lookups answered with a wrapper"
grep '^cuda' "$out"
echo "real libcudart: $w lookups answered with the preload's wrappers, $d with the driver's own (not wrapped)"
echo PASS
