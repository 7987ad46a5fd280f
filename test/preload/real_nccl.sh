#!/bin/sh
# The real NCCL with and without libprophet.so: identical results (version 22809, the same error
# code from ncclCommInitRank), and the preload says it found no CUDA driver at most once.
prog=$1 lib=$2
unset LD_LIBRARY_PATH
a=$(env -u LD_PRELOAD "$prog" 2>/dev/null) || { echo "FAIL: without preload: exit $?"; exit 1; }
b=$(env LD_PRELOAD="$lib" PROPHET_DEBUG=INFO "$prog" 2>/tmp/prophet-real-nccl.$$) ||
    { echo "FAIL: with preload: exit $?"; exit 1; }
echo "without: $a" | tr '\n' ' '; echo
echo "with:    $b" | tr '\n' ' '; echo
grep "prophet:" /tmp/prophet-real-nccl.$$
rm -f /tmp/prophet-real-nccl.$$
echo "$a" | grep -q "version=22809" || { echo "FAIL: version"; exit 1; }
[ "$a" = "$b" ] || { echo "FAIL: outputs differ"; exit 1; }
echo PASS
