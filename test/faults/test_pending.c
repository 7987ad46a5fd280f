/* A communicator torn down while the interposer holds all-reduces:
 *   fault_pending destroy N   every rank destroys the communicator with half an iteration held;
 *                             the held calls must still run: results complete and exact
 *   fault_pending abort N     every rank aborts it instead: no hang, no crash, the process exits
 *   fault_pending abort-one N rank 0 aborts, the others destroy: their held work fails (the peer
 *                             is gone) and they still return and exit
 * A third argument `held` makes a rank fail when none of those calls was held (so that a test of
 * held calls cannot pass vacuously).
 * Each rank first runs WARM iterations of K all-reduces (checked exactly) so that the preload
 * learns the sequence and agrees a plan, then issues the first K/2 calls of one more iteration and
 * tears down. It prints how many of those calls were still held when the teardown began (issued
 * but not yet in the emulated NCCL, emu_held_now) and how long the teardown took. Exit 0 =
 * every rank behaved. */
#include <string.h>

#include "fault_cluster.h"

#define K 8
#define WARM 40
#define BASE_COUNT 1024

enum how { DESTROY, ABORT, ABORT_ONE };

struct params {
    enum how how;
    int need_held;
};

static size_t count_of(int k)
{
    return BASE_COUNT + (size_t)k * 129;
}

static int iteration(int rank, int nranks, struct emu_held_count *held, CUstream s,
                     CUdeviceptr *buf, float *h, int iter, int ncalls)
{
    ncclComm_t comm = held->comm;

    for (int k = 0; k < ncalls; k++) {
        if (fault_fill(rank, k, iter, buf[k], h, count_of(k)))
            return 1;
        FAULT_NCCL(rank, ncclAllReduce((void *)buf[k], (void *)buf[k], count_of(k), ncclFloat32,
                                       ncclSum, comm, s));
        emu_held_note(held);
    }
    if (ncalls < K)
        return 0;
    FAULT_CU(rank, cuStreamSynchronize(s));
    for (int k = 0; k < K; k++)
        if (fault_check(rank, nranks, k, iter, buf[k], h, count_of(k)))
            return 1;
    return 0;
}

static int rank_main(int rank, int nranks, const ncclUniqueId *ids, void *arg)
{
    const struct params *p = arg;
    enum how how = p->how;
    CUcontext ctx;
    CUstream s;
    ncclComm_t comm;
    CUdeviceptr buf[K];
    float *h = malloc(count_of(K) * sizeof(float));
    struct emu_held_count fh = {0};
    long long held;
    int half = K / 2, aborts;
    double t0, dt;
    ncclResult_t rc;

    if (!h || fault_cuda_setup(rank, &ctx, &s))
        return 1;
    for (int k = 0; k < K; k++)
        FAULT_CU(rank, cuMemAlloc(&buf[k], count_of(k) * sizeof(float)));
    FAULT_NCCL(rank, ncclCommInitRank(&comm, nranks, ids[0], rank));
    fh.comm = comm;
    for (int it = 0; it < WARM; it++)
        if (iteration(rank, nranks, &fh, s, buf, h, it, K))
            return 1;
    if (iteration(rank, nranks, &fh, s, buf, h, WARM, half))
        return 1;
    held = emu_held_now(&fh);

    if (p->need_held && held == 0) {
        fprintf(stderr, "fault: rank %d: no call was held: nothing pending to test\n", rank);
        return 1;
    }
    aborts = how == ABORT || (how == ABORT_ONE && rank == 0);
    t0 = fault_now_s();
    rc = aborts ? ncclCommAbort(comm) : ncclCommDestroy(comm);
    dt = fault_now_s() - t0;
    printf("fault: rank %d: %lld of %d calls held; %s returned %s after %.3f s\n", rank, held, half,
           aborts ? "ncclCommAbort" : "ncclCommDestroy", ncclGetErrorString(rc), dt);
    fflush(stdout);
    if (how == DESTROY) {
        if (rc != ncclSuccess)
            return 1;
        FAULT_CU(rank, cuCtxSynchronize());
        for (int k = 0; k < half; k++)
            if (fault_check(rank, nranks, k, WARM, buf[k], h, count_of(k)))
                return 1;
        printf("fault: rank %d: the %d calls issued before destroy are complete and exact\n", rank,
               half);
    } else {
        /* pending work fails cleanly: the context can be synchronised, whatever it reports */
        CUresult crc = cuCtxSynchronize();
        printf("fault: rank %d: cuCtxSynchronize after teardown: %d\n", rank, (int)crc);
        if (aborts && rc != ncclSuccess)
            return 1;
    }
    for (int k = 0; k < K; k++)
        cuMemFree(buf[k]);
    cuStreamDestroy(s);
    free(h);
    return 0;
}

int main(int argc, char **argv)
{
    struct params p = {0};
    int n = argc > 2 ? atoi(argv[2]) : 2;

    if (argc < 2 || n < 2 || n > 16 || (argc > 3 && strcmp(argv[3], "held")))
        goto usage;
    p.need_held = argc > 3;
    if (!strcmp(argv[1], "destroy"))
        p.how = DESTROY;
    else if (!strcmp(argv[1], "abort"))
        p.how = ABORT;
    else if (!strcmp(argv[1], "abort-one"))
        p.how = ABORT_ONE;
    else
        goto usage;
    return fault_run_ranks(n, 1, 60.0, rank_main, &p);
usage:
    fprintf(stderr, "usage: fault_pending destroy|abort|abort-one [NRANKS 2..16] [held]\n");
    return 2;
}
