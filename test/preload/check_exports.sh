#!/bin/sh
# libprophet.so exports exactly the interposed NCCL entry points, and nothing else.
lib=$1
expected="ncclAllGather ncclAllReduce ncclAlltoAll ncclBcast ncclBroadcast ncclCommAbort
ncclCommDestroy ncclCommFinalize ncclCommInitAll ncclCommInitRank ncclCommInitRankConfig
ncclCommInitRankScalable ncclCommRevoke ncclCommShrink ncclCommSplit ncclGather ncclGroupEnd
ncclGroupStart ncclRecv ncclReduce ncclReduceScatter ncclScatter ncclSend"
got=$(nm -D --defined-only "$lib" | awk '{print $3}' | sort)
want=$(echo $expected | tr ' ' '\n' | sort)
if [ "$got" != "$want" ]; then
    echo "FAIL: exported symbols differ from the interposed NCCL API"
    echo "--- unexpected:"; echo "$got" | grep -vxF "$want"
    echo "--- missing:"; echo "$want" | grep -vxF "$got"
    exit 1
fi
echo "PASS: $(echo "$got" | wc -l) symbols, all nccl*"
