/* Several communicators on one stream (2 ranks): A from ncclCommInitRank, B = ncclCommSplit(A),
 * and N, a non-blocking one (ncclCommInitRankConfig, blocking = 0: passed through untouched).
 * Each iteration all-reduces K buffers on A, then K on B, on one stream, then one on N (values
 * written at the iteration's start); a host function after the iteration's last call checks every
 * buffer. (A and B interleaved call by call cannot share blocks: each call is ordered after the
 * other communicator's previous call, so its open block is released first.) Usage:
 * preload-comm-variants [ITERS] */
#include "emu_nccl_hooks.h"
#include "pt_check.h"

#define K 4
static int iters = 40;
static void pt_wait_ready(ncclComm_t c)
{
    ncclResult_t st = ncclInProgress;

    while (st == ncclInProgress)
        PT_NCCL(ncclCommGetAsyncError(c, &st));
    PT_NCCL(st);
}

static int pt_rank(int rank, int nranks, const ncclUniqueId *id)
{
    CUcontext ctx;
    ncclComm_t a, b, n;
    ncclComm_t comms[2 * K + 1];
    CUstream s;
    CUdeviceptr buf[2 * K + 1];
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    ncclUniqueId id2;
    struct pt_check *chk = calloc((size_t)iters * (2 * K + 1), sizeof(*chk));
    unsigned long long n_reached, n_at_once = 0;

    pt_rank_setup(rank, nranks, id, &ctx, &a);
    PT_NCCL(ncclCommSplit(a, 0, rank, &b, NULL));
    /* a second unique id for N, from rank 0 through A */
    PT_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    {
        CUdeviceptr idbuf;
        PT_CU(cuMemAlloc(&idbuf, sizeof(id2)));
        if (rank == 0)
            PT_NCCL(ncclGetUniqueId(&id2));
        PT_CU(cuMemcpyHtoD(idbuf, &id2, sizeof(id2)));
        PT_NCCL(ncclBroadcast((void *)idbuf, (void *)idbuf, sizeof(id2), ncclUint8, 0, a, s));
        PT_CU(cuStreamSynchronize(s));
        PT_CU(cuMemcpyDtoH(&id2, idbuf, sizeof(id2)));
    }
    cfg.blocking = 0;
    ncclResult_t rc = ncclCommInitRankConfig(&n, nranks, id2, rank, &cfg);
    if (rc != ncclSuccess && rc != ncclInProgress)
        PT_NCCL(rc);
    pt_wait_ready(n);
    for (int k = 0; k < 2 * K + 1; k++) {
        comms[k] = k == 2 * K ? n : (k >= K ? b : a);
        PT_CU(cuMemAlloc(&buf[k], (32u << k) * sizeof(float)));
    }
    for (int it = 0; it < iters; it++) {
        for (int k = 0; k < 2 * K + 1; k++)
            pt_fill(buf[k], (float)((rank + 1) * (it % 5 + 1) + k), 32u << k, s);
        for (int k = 0; k < 2 * K + 1; k++) {
            size_t cnt = 32u << k;
            struct pt_check *c = &chk[it * (2 * K + 1) + k];
            n_reached = emu_nccl_reached(comms[k]);
            rc =
                ncclAllReduce((void *)buf[k], (void *)buf[k], cnt, ncclFloat, ncclSum, comms[k], s);
            if (comms[k] == n) /* passed through: in NCCL when the call returns */
                n_at_once += emu_nccl_reached(n) == n_reached + 1;
            if (comms[k] == n && rc == ncclInProgress) {
                pt_wait_ready(n);
                rc = ncclSuccess;
            }
            PT_NCCL(rc);
            *c = (struct pt_check){(const float *)(uintptr_t)buf[k], cnt,
                                   (float)(3 * (it % 5 + 1) + 2 * k)};
        }
        for (int k = 0; k < 2 * K + 1; k++)
            PT_CU(cuLaunchHostFunc(s, pt_check_fn, &chk[it * (2 * K + 1) + k]));
    }
    PT_CU(cuStreamSynchronize(s));
    int bad = pt_check_report(rank, (long)iters * (2 * K + 1));
    printf("rank %d: non-blocking comm: %llu of %d calls reached NCCL when they returned\n", rank,
           n_at_once, iters);
    PT_NCCL(ncclCommDestroy(n));
    PT_NCCL(ncclCommDestroy(b));
    PT_NCCL(ncclCommDestroy(a));
    free(chk); /* every host function ran: the stream was synchronised */
    return bad;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        iters = atoi(argv[1]);
    return pt_run_ranks(2, pt_rank);
}
