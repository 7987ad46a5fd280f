#!/bin/sh
# The real NCCL with and without libprophet.so: both runs exit 0 (test_real_nccl.c checks the calls),
# identical results (the same version, the same error code from ncclCommInitRank), and the
# preload is active over that NCCL: exactly one 'prophet: .*INFO active: NCCL <version>' line naming
# the version the program printed.
prog=$1 lib=$2
unset LD_LIBRARY_PATH
a=$(env -u LD_PRELOAD "$prog" 2>/dev/null) || { echo "FAIL: without preload: exit $?"; exit 1; }
b=$(env LD_PRELOAD="$lib" PROPHET_DEBUG=INFO "$prog" 2>/tmp/prophet-real-nccl.$$) ||
    { echo "FAIL: with preload: exit $?"; exit 1; }
echo "without: $a" | tr '\n' ' '; echo
echo "with:    $b" | tr '\n' ' '; echo
grep "prophet:" /tmp/prophet-real-nccl.$$
ver=$(echo "$a" | sed -n 's/.*version=\([0-9]*\).*/\1/p')
# the line names the version as NCCL does (2.28.9), from its code (22809)
ver=$(echo "$ver" | awk '{ c = $1 + 0; if (c >= 10000) printf "%d.%d.%d", c / 10000, c % 10000 / 100, c % 100;
                            else printf "%d.%d.%d", c / 1000, c % 1000 / 100, c % 100 }')
active=$(grep -c "^prophet: .*INFO active: NCCL $ver," /tmp/prophet-real-nccl.$$)
rm -f /tmp/prophet-real-nccl.$$
[ -n "$ver" ] || { echo "FAIL: no version printed"; exit 1; }
[ "$a" = "$b" ] || { echo "FAIL: outputs differ"; exit 1; }
[ "$active" -eq 1 ] || { echo "FAIL: $active 'prophet: ... INFO active: NCCL $ver' lines, want 1"; exit 1; }
echo PASS
