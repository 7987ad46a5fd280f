/* A watchdog thread aborts a communicator while the job's main thread waits in ncclCommDestroy for
 * a block that never ends (its peer stopped issuing calls): the abort must return at once, as it
 * does without the preload, not after the main thread's wait (docs/completion-holding.md, "A
 * dropped call"). fault_abort_busy 2 ranks, WARM iterations of K all-reduces (checked) under a
 * one-block-per-iteration plan; then rank 1 stops calling (it sleeps STALL_S, then exits), rank 0
 * issues one more iteration (its block is released at the last call and waits in NCCL for rank 1)
 * and calls ncclCommDestroy; 200 ms later a second thread calls ncclCommAbort. Rank 0 passes when
 * that returns within BOUND_S, and ends the process there (NCCL's Destroy then runs on an aborted
 * handle, which no job does; Destroy may return first, woken by the same abort, and then waits
 * for the watchdog's verdict). The preload once held the comm lock through Destroy's wait for the
 * block: the abort waited for rank 1's exit (STALL_S). */
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "emu_nccl_hooks.h"
#include "fault_cluster.h"

#define K 4
#define WARM 40
#define COUNT 1024
#define STALL_S 6
#define BOUND_S 3.0

static size_t count_of(int k)
{
    return COUNT - 64 * (size_t)k;
}

static int iteration(int rank, int nranks, ncclComm_t comm, CUstream s, CUdeviceptr *buf, float *h,
                     int iter, int check)
{
    for (int k = 0; k < K; k++) {
        if (fault_fill(rank, k, iter, buf[k], h, count_of(k)))
            return 1;
        FAULT_NCCL(rank, ncclAllReduce((void *)buf[k], (void *)buf[k], count_of(k), ncclFloat32,
                                       ncclSum, comm, s));
    }
    if (!check)
        return 0;
    FAULT_CU(rank, cuStreamSynchronize(s));
    for (int k = 0; k < K; k++)
        if (fault_check(rank, nranks, k, iter, buf[k], h, count_of(k)))
            return 1;
    return 0;
}

static void *watchdog(void *arg)
{
    ncclComm_t comm = *(ncclComm_t *)arg;
    struct timespec ts = {0, 200 * 1000 * 1000};
    double t0, dt;
    ncclResult_t rc;

    nanosleep(&ts, NULL);
    t0 = fault_now_s();
    rc = ncclCommAbort(comm);
    dt = fault_now_s() - t0;
    printf("fault: rank 0: ncclCommAbort from the watchdog returned %d after %.3f s\n", (int)rc,
           dt);
    fflush(stdout);
    _exit(dt < BOUND_S ? 0 : 1); /* the main thread is still inside the preload or NCCL */
    return NULL;
}

static int g_setup;

static int rank_main(int rank, int nranks, const ncclUniqueId *ids, void *arg)
{
    CUcontext ctx;
    CUstream s;
    CUdeviceptr buf[K];
    ncclComm_t comm;
    pthread_t t;
    float *h = malloc(COUNT * sizeof(float));

    (void)arg;
    if (!h || fault_cuda_setup(rank, &ctx, &s))
        return 1;
    for (int k = 0; k < K; k++)
        FAULT_CU(rank, cuMemAlloc(&buf[k], count_of(k) * sizeof(float)));
    FAULT_NCCL(rank, ncclCommInitRank(&comm, nranks, ids[0], rank));
    if (g_setup) {
        if (rank == 1) {
            sleep(STALL_S); /* a peer that never issues a call */
            _exit(0);
        }
        if (pthread_create(&t, NULL, watchdog, &comm))
            return 1;
        /* the preload's setup vote waits for rank 1 here; the abort ends it (an error) */
        (void)ncclAllReduce((void *)buf[0], (void *)buf[0], count_of(0), ncclFloat32, ncclSum, comm,
                            s);
        pthread_join(t, NULL); /* the watchdog ends the process */
        return 1;
    }
    for (int it = 0; it < WARM; it++)
        if (iteration(rank, nranks, comm, s, buf, h, it, 1))
            return 1;
    if (rank == 1) {
        sleep(STALL_S); /* a peer that stopped issuing calls */
        _exit(0);
    }
    if (iteration(rank, nranks, comm, s, buf, h, WARM, 0))
        return 1;
    if (pthread_create(&t, NULL, watchdog, &comm))
        return 1;
    /* waits for the block: only the abort ends it. The abort ends NCCL's wait inside Destroy and
     * returns itself at about the same moment: which thread runs first after that is the
     * scheduler's choice, so the verdict is the watchdog's alone (how long the abort took), and
     * this thread waits for it. */
    ncclCommDestroy(comm);
    pthread_join(t, NULL); /* the watchdog ends the process */
    return 1;
}

int main(int argc, char **argv)
{
    g_setup = argc > 1 && !strcmp(argv[1], "setup");
    return fault_run_ranks(2, 1, 30.0, rank_main, NULL);
}
