/* A communicator torn down while the interposer holds all-reduces (the default mode):
 *   fault_pending destroy N   every rank destroys the communicator with half an iteration held;
 *                             the held calls must still run: results complete and exact
 *   fault_pending abort N     every rank aborts it instead: no hang, no crash, the process exits
 *   fault_pending abort-one N rank 0 aborts, the others destroy: their held work fails (the peer
 *                             is gone) and they still return and exit
 * A third argument `held` makes a rank fail when none of those calls was held (so that a test of
 * the default mode cannot pass vacuously).
 * Each rank first runs WARM iterations of K all-reduces (checked exactly) so that the preload
 * learns the sequence and agrees a plan, then issues the first K/2 calls of one more iteration and
 * tears down. It prints how many of those calls were still held (their stream still not
 * ready after 300 ms, their buffers unreduced) and how long the teardown took. Exit 0 = every rank
 * behaved. */
#include <stdint.h>
#include <string.h>
#include <unistd.h>

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

static int iteration(int rank, int nranks, ncclComm_t comm, CUstream s, CUdeviceptr *buf, float *h,
                     int iter, int ncalls)
{
    for (int k = 0; k < ncalls; k++) {
        if (fault_fill(rank, k, iter, buf[k], h, count_of(k)))
            return 1;
        FAULT_NCCL(rank, ncclAllReduce((void *)buf[k], (void *)buf[k], count_of(k), ncclFloat32,
                                       ncclSum, comm, s));
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
    int held = 0, half = K / 2, aborts;
    double t0, dt;
    ncclResult_t rc;

    if (!h || fault_cuda_setup(rank, &ctx, &s))
        return 1;
    for (int k = 0; k < K; k++)
        FAULT_CU(rank, cuMemAlloc(&buf[k], count_of(k) * sizeof(float)));
    FAULT_NCCL(rank, ncclCommInitRank(&comm, nranks, ids[0], rank));
    for (int it = 0; it < WARM; it++)
        if (iteration(rank, nranks, comm, s, buf, h, it, K))
            return 1;
    if (iteration(rank, nranks, comm, s, buf, h, WARM, half))
        return 1;
    /* A held call's completion is held: its stream answers "not ready" (a query releases
     * nothing) and a host synchronisation would release it. So the stream is polled for 300 ms,
     * and if it still is not ready the buffers are read directly (emulated device memory is host
     * memory; no CUDA call the preload could see): held calls left them unreduced. */
    {
        double until = fault_now_s() + 0.3;
        CUresult q;
        while ((q = cuStreamQuery(s)) == CUDA_ERROR_NOT_READY && fault_now_s() < until)
            usleep(1000);
        for (int k = 0; k < half; k++) {
            const float *d = (const float *)(uintptr_t)buf[k];
            size_t same = 0;
            for (size_t i = 0; i < count_of(k); i++)
                same += d[i] == fault_value(rank, k, WARM, i);
            held += q == CUDA_ERROR_NOT_READY && same == count_of(k);
        }
    }

    if (p->need_held && held == 0) {
        fprintf(stderr, "fault: rank %d: no call was held: nothing pending to test\n", rank);
        return 1;
    }
    aborts = how == ABORT || (how == ABORT_ONE && rank == 0);
    t0 = fault_now_s();
    rc = aborts ? ncclCommAbort(comm) : ncclCommDestroy(comm);
    dt = fault_now_s() - t0;
    printf("fault: rank %d: %d of %d calls held; %s returned %s after %.3f s\n", rank, held, half,
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
