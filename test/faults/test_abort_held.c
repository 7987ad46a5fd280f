/* A communicator aborted or revoked while the interposer holds all-reduces, with a stream behind
 * them through an event, on which a consumer is launched after the fault
 * (docs/completion-holding.md, "A dropped call"): fault_abort_held abort-healthy  every rank aborts
 * a healthy comm: the consumer must read the fully reduced values, or the job must get a CUDA error
 *   fault_abort_held abort-thread   the same, ncclCommAbort called by another thread, one with no
 *                                   current context (PyTorch's watchdog aborts so)
 *   fault_abort_held abort-error    the comm is in error first (emuNcclCommInjectError): the
 *                                   consumer must never run, the context must report an error and
 *                                   ncclCommGetAsyncError the preload's sticky error
 *   fault_abort_held revoke-healthy, revoke-error   the same with ncclCommRevoke (the handle
 *                                   stays valid: ncclCommGetAsyncError then ncclCommDestroy)
 *   fault_abort_held fallback       no abort: the block's release on X fails (cuStreamWaitEvent)
 *                                   and so does its gate on the members' stream
 *                                   (cuStreamWriteValue32): the fallback path
 *   fault_abort_held gate-fail      X's gate write fails and so do both host waits
 *   fault_abort_held release-error  no abort: the comm is in error when the job's wait releases
 *                                   the block, and NCCL refuses its calls
 * Each rank runs WARM iterations of K all-reduces (checked exactly) so that the preload agrees a
 * one-block-per-iteration plan, then issues the first K/2 calls of one more iteration (they must
 * be held, or the rank fails: the fault must hit while calls are held), records an event on the
 * calls' stream and makes a second stream wait on it. Then the fault, then a consumer on the second
 * stream (a host function that reads the K/2 buffers: the preload gates it behind the block, which
 * the fault released or dropped).
 * The consumer reports whether it ran and how many elements differed from the reduced sums; a
 * rank fails when the consumer read wrong values, or did not run while the context reports no
 * error; on a healthy comm (every rank aborts at the same point) the consumer must have run on the
 * reduced values. Exit 0 = every rank behaved. */
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "emu_cuda.h"
#include "fault_cluster.h"

#define K 8
#define WARM 40
#define BASE_COUNT 1024

enum how {
    ABORT_HEALTHY,
    ABORT_THREAD,
    ABORT_ERROR,
    REVOKE_HEALTHY,
    REVOKE_ERROR,
    FALLBACK,
    GATE_FAIL,
    RELEASE_ERROR
};
static const char *const how_names[] = {"abort-healthy",  "abort-thread", "abort-error",
                                        "revoke-healthy", "revoke-error", "fallback",
                                        "gate-fail",      "release-error"};

struct consumer {
    CUdeviceptr *buf;
    int rank, nranks, n;
    volatile int ran;
    volatile size_t wrong, unreduced;
};

static size_t count_of(int k)
{
    return BASE_COUNT + (size_t)k * 129;
}

/* Runs on the consumer stream, behind the gate on the held block (device memory is host memory
 * in the emulator). */
static void consume(void *arg)
{
    struct consumer *c = arg;
    size_t wrong = 0, unreduced = 0;

    for (int k = 0; k < c->n; k++) {
        const float *v = (const float *)(uintptr_t)c->buf[k];
        for (size_t i = 0; i < count_of(k); i++) {
            wrong += v[i] != fault_sum(c->nranks, k, WARM, i);
            unreduced += v[i] == fault_value(c->rank, k, WARM, i) &&
                         v[i] != fault_sum(c->nranks, k, WARM, i);
        }
    }
    c->wrong = wrong;
    c->unreduced = unreduced;
    __atomic_store_n(&c->ran, 1, __ATOMIC_RELEASE);
}

static int iteration(int rank, int nranks, struct emu_held_count *held, CUstream s,
                     CUdeviceptr *buf, float *h, int iter, int ncalls)
{
    for (int k = 0; k < ncalls; k++) {
        if (fault_fill(rank, k, iter, buf[k], h, count_of(k)))
            return 1;
        FAULT_NCCL(rank, ncclAllReduce((void *)buf[k], (void *)buf[k], count_of(k), ncclFloat32,
                                       ncclSum, held->comm, s));
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

static void *abort_thread(void *arg)
{
    static ncclResult_t rc;

    rc = ncclCommAbort(*(ncclComm_t *)arg);
    return &rc;
}

/* The fault itself; returns what the job's own wait on the calls' stream returned, if it made
 * one (CUDA_SUCCESS otherwise). */
static int fault(int rank, enum how how, ncclComm_t comm, CUstream s, CUresult *wait_rc)
{
    ncclResult_t rc = ncclSuccess, err = ncclSuccess;

    *wait_rc = CUDA_SUCCESS;
    if (how == ABORT_ERROR || how == REVOKE_ERROR || how == RELEASE_ERROR)
        emuNcclCommInjectError(comm, ncclRemoteError);
    switch (how) {
    case ABORT_HEALTHY:
    case ABORT_ERROR:
        rc = ncclCommAbort(comm);
        break;
    case ABORT_THREAD: {
        pthread_t t;
        void *ret = NULL;
        if (pthread_create(&t, NULL, abort_thread, &comm) || pthread_join(t, &ret))
            return 1;
        rc = *(ncclResult_t *)ret;
        break;
    }
    case REVOKE_HEALTHY:
    case REVOKE_ERROR:
        rc = ncclCommRevoke(comm, 0);
        break;
    case FALLBACK:
        /* a block that takes 300 ms: a gate opened too early lets the consumer in first */
        emuNcclSetLatency(300000);
        /* the job's wait releases the block: X's wait for it fails, then its gate on the
         * members' stream */
        emuFaultArm("cuStreamWaitEvent:1,cuStreamWriteValue32:1");
        *wait_rc = cuStreamSynchronize(s);
        break;
    case RELEASE_ERROR:
        *wait_rc = cuStreamSynchronize(s);
        break;
    case GATE_FAIL:
        emuNcclSetLatency(300000);
        /* X's gate write fails, then the preload's two host waits for the block */
        emuFaultArm("cuStreamWriteValue32:1,cuEventSynchronize:1,cuStreamSynchronize:1");
        *wait_rc = cuStreamSynchronize(s);
        break;
    }
    emuFaultArm("");
    printf("fault: rank %d: %s: nccl %s, the job's wait %d\n", rank, how_names[how],
           ncclGetErrorString(rc), (int)*wait_rc);
    if (how == REVOKE_HEALTHY || how == REVOKE_ERROR) {
        if (ncclCommGetAsyncError(comm, &err) != ncclSuccess || err == ncclSuccess) {
            fprintf(stderr, "fault: rank %d: ncclCommGetAsyncError after revoke: %s\n", rank,
                    ncclGetErrorString(err));
            return 1;
        }
        printf("fault: rank %d: ncclCommGetAsyncError after revoke: %s\n", rank,
               ncclGetErrorString(err));
        rc = ncclCommDestroy(comm);
        printf("fault: rank %d: ncclCommDestroy: %s\n", rank, ncclGetErrorString(rc));
    }
    return 0;
}

static int rank_main(int rank, int nranks, const ncclUniqueId *ids, void *arg)
{
    enum how how = *(const enum how *)arg;
    int half = K / 2, dropped = how == ABORT_ERROR || how == REVOKE_ERROR || how == RELEASE_ERROR;
    struct consumer cons = {.rank = rank, .nranks = nranks, .n = half};
    struct emu_held_count fh = {0};
    CUdeviceptr buf[K];
    CUcontext ctx;
    CUstream s, s2;
    CUevent e;
    CUresult crc, wait_rc;
    ncclComm_t comm;
    ncclResult_t err = ncclSuccess;
    float *h = malloc(count_of(K) * sizeof(float));
    long long held;

    if (!h || fault_cuda_setup(rank, &ctx, &s))
        return 1;
    FAULT_CU(rank, cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    FAULT_CU(rank, cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    for (int k = 0; k < K; k++)
        FAULT_CU(rank, cuMemAlloc(&buf[k], count_of(k) * sizeof(float)));
    FAULT_NCCL(rank, ncclCommInitRank(&comm, nranks, ids[0], rank));
    fh.comm = comm;
    cons.buf = buf;
    for (int it = 0; it < WARM; it++)
        if (iteration(rank, nranks, &fh, s, buf, h, it, K))
            return 1;
    if (iteration(rank, nranks, &fh, s, buf, h, WARM, half))
        return 1;
    /* the consumer's stream: behind the calls through an event (a virtual record, and a wait on
     * it that the preload absorbs: nothing of it reaches the GPU yet) */
    FAULT_CU(rank, cuEventRecord(e, s));
    FAULT_CU(rank, cuStreamWaitEvent(s2, e, 0));
    held = emu_held_now(&fh);
    if (held <= 0) {
        fprintf(stderr, "fault: rank %d: no call was held: nothing pending to test\n", rank);
        return 1;
    }
    if (__atomic_load_n(&cons.ran, __ATOMIC_ACQUIRE)) {
        fprintf(stderr, "fault: rank %d: the consumer ran before its calls were released\n", rank);
        return 1;
    }
    printf("fault: rank %d: %lld of %d calls held when the fault hit\n", rank, held, half);
    if (fault(rank, how, comm, s, &wait_rc))
        return 1;
    /* the consumer, launched after the fault on the stream behind the calls: it must read the
     * reduced values or never run (its launch may fail with the context's error) */
    crc = cuLaunchHostFunc(s2, consume, &cons);
    if (crc == CUDA_SUCCESS)
        crc = cuCtxSynchronize(); /* returns once the consumer ran, or with the context's error */
    printf("fault: rank %d: consumer %s (%zu wrong, %zu un-reduced); cuCtxSynchronize %d\n", rank,
           cons.ran ? "ran" : "did not run", cons.wrong, cons.unreduced, (int)crc);
    fflush(stdout);
    if (cons.ran && cons.wrong) {
        fprintf(stderr, "fault: rank %d: the consumer read %zu wrong elements (%zu un-reduced)\n",
                rank, cons.wrong, cons.unreduced);
        return 1;
    }
    if (!cons.ran && crc == CUDA_SUCCESS && wait_rc == CUDA_SUCCESS) {
        fprintf(stderr, "fault: rank %d: the consumer never ran and no CUDA error says why\n",
                rank);
        return 1;
    }
    if ((how == ABORT_HEALTHY || how == ABORT_THREAD || how == REVOKE_HEALTHY) &&
        (!cons.ran || crc != CUDA_SUCCESS)) {
        /* every rank aborts at the same point: the block they all issue completes */
        fprintf(stderr, "fault: rank %d: a healthy comm's held calls did not complete\n", rank);
        return 1;
    }
    if (dropped) {
        /* nothing could have reduced them: the consumer must not have run, and the error stays */
        if (cons.ran || crc == CUDA_SUCCESS) {
            fprintf(stderr, "fault: rank %d: dropped calls: the consumer ran or no CUDA error\n",
                    rank);
            return 1;
        }
        if (how == ABORT_ERROR) { /* the preload answers for the aborted handle */
            if (ncclCommGetAsyncError(comm, &err) != ncclSuccess || err == ncclSuccess) {
                fprintf(stderr, "fault: rank %d: no sticky error after the abort\n", rank);
                return 1;
            }
            printf("fault: rank %d: ncclCommGetAsyncError after abort: %s\n", rank,
                   ncclGetErrorString(err));
        }
    }
    if (how == FALLBACK || how == GATE_FAIL || how == RELEASE_ERROR) {
        /* the comm stopped with a sticky error of the preload. ncclCommGetAsyncError never
         * blocks: while the preload's poller holds the comm, it answers NCCL's own (none), and a
         * watchdog asks again at its next poll, as here (one try failed under TSan) */
        ncclResult_t grc = ncclSuccess;
        err = ncclSuccess;
        for (int tries = 0; tries < 200 && grc == ncclSuccess && err == ncclSuccess; tries++)
            if ((grc = ncclCommGetAsyncError(comm, &err)) == ncclSuccess && err == ncclSuccess)
                usleep(1000);
        if (grc != ncclSuccess || err == ncclSuccess) {
            fprintf(stderr, "fault: rank %d: no sticky error on the communicator\n", rank);
            return 1;
        }
        printf("fault: rank %d: ncclCommGetAsyncError: %s\n", rank, ncclGetErrorString(err));
    }
    printf("fault: rank %d: PASS (%s)\n", rank, how_names[how]);
    fflush(stdout);
    free(h);
    return 0; /* exit: the preload's exit hook runs, on a dead context too */
}

int main(int argc, char **argv)
{
    enum how how;
    int n = argc > 2 ? atoi(argv[2]) : 2;

    if (argc < 2 || n < 2 || n > 16)
        goto usage;
    for (how = ABORT_HEALTHY; how <= RELEASE_ERROR; how++)
        if (!strcmp(argv[1], how_names[how]))
            return fault_run_ranks(n, 1, 30.0, rank_main, &how);
usage:
    fprintf(stderr, "usage: fault_abort_held "
                    "abort-healthy|abort-thread|abort-error|revoke-healthy|revoke-error|"
                    "fallback|gate-fail|release-error [NRANKS]\n");
    return 2;
}
