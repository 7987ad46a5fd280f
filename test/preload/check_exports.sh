#!/bin/sh
# libprophet.so exports exactly the interposed NCCL entry points, the wrapped CUDA driver entry
# points of preload/cuda_hook_table.h (read from the table, so the two cannot drift) and dlsym.
#   check_exports.sh LIB TABLE
lib=$1
table=$2
nccl="ncclAllGather ncclAllReduce ncclAlltoAll ncclBcast ncclBroadcast ncclCommAbort
ncclCommDestroy ncclCommGetAsyncError ncclCommFinalize ncclCommInitAll ncclCommInitRank ncclCommInitRankConfig
ncclCommInitRankScalable ncclCommRevoke ncclCommShrink ncclCommSplit ncclGather ncclGroupEnd
ncclGroupSimulateEnd ncclGroupStart ncclRecv ncclRedOpDestroy ncclReduce ncclReduceScatter ncclScatter ncclSend"
[ -r "$table" ] || { echo "FAIL: no hook table '$table'"; exit 1; }
cuda=$(sed -n 's/^ *H(\(cu[A-Za-z0-9_]*\),.*/\1/p' "$table")
[ -n "$cuda" ] || { echo "FAIL: no entry read from $table"; exit 1; }
got=$(nm -D --defined-only "$lib" | awk '{print $3}' | sort)
want=$(echo $nccl $cuda dlsym | tr ' ' '\n' | sort)
if [ "$got" != "$want" ]; then
    echo "FAIL: exported symbols differ from the NCCL API + $table + dlsym"
    echo "--- unexpected:"; echo "$got" | grep -vxF "$want"
    echo "--- missing:"; echo "$want" | grep -vxF "$got"
    exit 1
fi
# The preload's own lookups use glibc's dlsym (preload/real_libs/dlsym_real.c): a call of its own exported
# dlsym would show as a relocation against it.
if readelf -rW "$lib" | awk '{print $5}' | grep -qx 'dlsym'; then
    echo "FAIL: libprophet.so calls its own exported dlsym (use prophet_dlsym_real)"
    exit 1
fi
echo "PASS: $(echo "$got" | wc -l) symbols: $(echo $nccl | wc -w) nccl*, $(echo "$cuda" | wc -l) cu*, dlsym"
