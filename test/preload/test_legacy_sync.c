/* The legacy default stream's implicit synchronisation with held calls (2 ranks): each iteration
 * all-reduces K buffers on a BLOCKING stream (created without CU_STREAM_NON_BLOCKING), then
 * enqueues on the legacy default stream (NULL) one host function per buffer that checks its sum.
 * The legacy stream waits for the blocking stream's earlier work, including the held calls: the
 * holding engine must make those host functions wait for the blocks (the driver alone only orders
 * them after what the blocking stream really received, the ready events). The values are written on
 * the blocking stream at each iteration's start, after the previous checks (the blocking stream
 * waits for the legacy stream in turn). Usage: preload-legacy-sync [ITERS] */
#include <stdlib.h>

#include "pt_check.h"

#define K 6
static const size_t pt_counts[K] = {1024, 64, 4096, 16, 2048, 256};
static int iters = 60;

static float pt_value(int rank, int it, int k)
{
    return (float)((rank + 1) * (it % 7 + 1) + k);
}

static int pt_rank(int rank, int nranks, const ncclUniqueId *id)
{
    CUcontext ctx;
    ncclComm_t comm;
    CUstream s;
    CUdeviceptr buf[K];
    struct pt_check *chk = calloc((size_t)iters * K, sizeof(*chk));

    pt_rank_setup(rank, nranks, id, &ctx, &comm);
    PT_CU(cuStreamCreate(&s, CU_STREAM_DEFAULT)); /* blocking: synchronises with the legacy one */
    for (int k = 0; k < K; k++)
        PT_CU(cuMemAlloc(&buf[k], pt_counts[k] * sizeof(float)));
    for (int it = 0; it < iters; it++) {
        for (int k = 0; k < K; k++)
            pt_fill(buf[k], pt_value(rank, it, k), pt_counts[k], s);
        for (int k = 0; k < K; k++) {
            float sum = 0;
            for (int r = 0; r < nranks; r++)
                sum += pt_value(r, it, k);
            PT_NCCL(ncclAllReduce((void *)buf[k], (void *)buf[k], pt_counts[k], ncclFloat, ncclSum,
                                  comm, s));
            chk[it * K + k] =
                (struct pt_check){(const float *)(uintptr_t)buf[k], pt_counts[k], sum};
        }
        for (int k = 0; k < K; k++)
            PT_CU(cuLaunchHostFunc(NULL, pt_check_fn, &chk[it * K + k]));
    }
    PT_CU(cuCtxSynchronize());
    int bad = pt_check_report(rank, (long)iters * K);
    PT_NCCL(ncclCommDestroy(comm));
    return bad;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        iters = atoi(argv[1]);
    return pt_run_ranks(2, pt_rank);
}
