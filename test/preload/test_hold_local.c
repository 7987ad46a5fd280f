/* The holding engine where two communicators hold at once and where a GPU gate cannot be written,
 * under the preload on the emulated cluster (2 ranks; one block per iteration of each
 * communicator: PROPHET_POLICY=buckets). A host function reads a held call's buffer and compares
 * every element with the exact sum.
 *   hold-local twocomm   comm A (three calls an iteration on stream s0) and comm B (two, on s1).
 *                        After A's call 0 and B's call 0 (both held), s0 waits on an event
 *                        recorded behind B's call (virtual) and records R (virtual: behind both
 *                        blocks); A's call 1 on s0 then releases B's block first (a held member
 *                        never depends on another comm's open block) and makes s0's dependencies
 *                        real. R must still wait for A's block: a stream C waits on R and a host
 *                        function on it reads A's call 0, 20 ms before A's call 2 closes A's block
 *                        (on the code before, R was recorded behind B's gate only and fired
 *                        before A's block ran).
 *   hold-local gatefail  one comm, two calls an iteration; after call 0 (held) an event E is
 *                        recorded behind it (virtual) and stream C waits on E; call 1 closes the
 *                        block, whose NCCL pass takes 30 ms (emuNcclSetLatency); then the next
 *                        cuStreamWaitValue32 is made to fail (emuFaultArm) and a host function on
 *                        C reads call 0: C's GPU gate on the released block cannot be written, and
 *                        the read must still see the sum (on the code before, only a WARN, and
 *                        the host function ran before the block).
 *   hold-local newcoll   one comm, two calls an iteration; after call 0 (held) an event E is
 *                        recorded behind it and stream C waits on E; then a collective that
 *                        nccl.h does not declare (the emulated NCCL's ncclAllReduceFuture, found
 *                        with dlsym: an entry point of a newer release that the preload does not
 *                        export) all-reduces call 0's result on C: the result must be nranks
 *                        times call 0's sum. (It reaches NCCL ahead of a held call 0, which the
 *                        preload cannot reorder: the preload holds nothing on such an NCCL, and
 *                        the run hung when it held.)
 *   hold-local streams   one comm, two calls an iteration; 20,000 streams created, then all
 *                        destroyed, in iteration 10 (nothing held yet) and again between call 0
 *                        (held) and call 1 in iteration 50: the heap in use must grow by less
 *                        than 1 MiB each time (2.2 MB when an entry was kept per stream made).
 *   hold-local ptds      one comm, two calls an iteration on the main thread's stream; after call 0
 *                        (held) an event R is recorded behind it and a second thread, on its own
 *                        default stream per thread (CU_STREAM_PER_THREAD), waits on R, runs a
 *                        host function that reads call 0, records an event and synchronises that
 *                        stream, while the main thread issues call 1 only 10 ms later. The handle
 *                        CU_STREAM_PER_THREAD names another stream in every thread: none of the
 *                        second thread's work may be issued on the main thread's (the read must
 *                        see the sum, and the second thread's synchronisation must return).
 * Prints "rank R: SCENARIO: ITERS iterations exact, N reads behind held calls"; exit 0 when every
 * rank passed. */
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "emu_cuda.h"
#include "emu_nccl_hooks.h"
#include "pt_check.h"

#define ITERS 60
#define COUNT 512

#define FAIL PT_FAIL

static const char *g_scenario;

static float value_of(int r, int c, int k, int it)
{
    return (float)((r + 1) * 5 + c * 3 + k * 7 + it % 9);
}

static float sum_of(int nranks, int c, int k, int it)
{
    float s = 0;
    for (int r = 0; r < nranks; r++)
        s += value_of(r, c, k, it);
    return s;
}

struct read_check {
    const float *buf;
    float want;
    volatile int ran, bad;
};

static void read_fn(void *arg)
{
    struct read_check *rc = arg;

    for (int i = 0; i < COUNT; i++)
        if (rc->buf[i] != rc->want) {
            rc->bad = 1;
            break;
        }
    rc->ran = 1;
}

/* Call k of an iteration has COUNT - 64 k elements: calls that differ, so that the preload learns
 * where an iteration begins. */
static size_t count_of(int k)
{
    return COUNT - 64 * (size_t)k;
}

static int reduce(int rank, ncclComm_t comm, CUdeviceptr b, int k, CUstream s,
                  struct emu_held_count *h)
{
    ncclResult_t rc =
        ncclAllReduce((void *)b, (void *)b, count_of(k), ncclFloat32, ncclSum, comm, s);
    if (rc != ncclSuccess)
        FAIL("ncclAllReduce: %s", ncclGetErrorString(rc));
    emu_held_note(h);
    return 0;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

static int twocomm(int rank, int nranks, ncclComm_t a, long *behind)
{
    CUstream s0, s1, c;
    CUevent e1, r;
    CUdeviceptr ba[3], bb[2];
    ncclComm_t b;
    struct emu_held_count ha = {.comm = a}, hb;
    struct read_check chk;

    PT_NCCL(ncclCommSplit(a, 0, rank, &b, NULL));
    hb = (struct emu_held_count){.comm = b};
    PT_CU(cuStreamCreate(&s0, CU_STREAM_NON_BLOCKING));
    PT_CU(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    PT_CU(cuStreamCreate(&c, CU_STREAM_NON_BLOCKING));
    PT_CU(cuEventCreate(&e1, CU_EVENT_DISABLE_TIMING));
    PT_CU(cuEventCreate(&r, CU_EVENT_DISABLE_TIMING));
    for (int k = 0; k < 3; k++)
        PT_CU(cuMemAlloc(&ba[k], COUNT * sizeof(float)));
    for (int k = 0; k < 2; k++)
        PT_CU(cuMemAlloc(&bb[k], COUNT * sizeof(float)));
    for (int it = 0; it < ITERS; it++) {
        for (int k = 0; k < 3; k++)
            pt_fill(ba[k], value_of(rank, 0, k, it), count_of(k), s0);
        for (int k = 0; k < 2; k++)
            pt_fill(bb[k], value_of(rank, 1, k, it), count_of(k), s1);
        if (reduce(rank, a, ba[0], 0, s0, &ha) || reduce(rank, b, bb[0], 0, s1, &hb))
            return 1;
        PT_CU(cuEventRecord(e1, s1));
        PT_CU(cuStreamWaitEvent(s0, e1, 0));
        PT_CU(cuEventRecord(r, s0));
        if (emu_held_now(&ha) > 0 && emu_held_now(&hb) > 0)
            (*behind)++;
        if (reduce(rank, a, ba[1], 1, s0, &ha))
            return 1;
        chk = (struct read_check){(const float *)(uintptr_t)ba[0], sum_of(nranks, 0, 0, it), 0, 0};
        PT_CU(cuStreamWaitEvent(c, r, 0));
        PT_CU(cuLaunchHostFunc(c, read_fn, &chk));
        sleep_ms(20); /* a read that R let through early has run by now */
        if (reduce(rank, a, ba[2], 2, s0, &ha) || reduce(rank, b, bb[1], 1, s1, &hb))
            return 1;
        PT_CU(cuStreamSynchronize(c));
        PT_CU(cuStreamSynchronize(s0));
        PT_CU(cuStreamSynchronize(s1));
        if (!chk.ran || chk.bad)
            FAIL("twocomm: iteration %d: a read behind R saw comm A's call 0 %s", it,
                 chk.ran ? "before its all-reduce ran" : "never");
    }
    PT_NCCL(ncclCommDestroy(b));
    return 0;
}

static int gatefail(int rank, int nranks, ncclComm_t comm, long *behind)
{
    CUstream s, c;
    CUevent e;
    CUdeviceptr buf[2];
    struct emu_held_count h = {.comm = comm};
    struct read_check chk;

    PT_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    PT_CU(cuStreamCreate(&c, CU_STREAM_NON_BLOCKING));
    PT_CU(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    for (int k = 0; k < 2; k++)
        PT_CU(cuMemAlloc(&buf[k], COUNT * sizeof(float)));
    for (int it = 0; it < ITERS; it++) {
        int late = it >= 40; /* a plan is in force by then (agreed near iteration 31) */
        for (int k = 0; k < 2; k++)
            pt_fill(buf[k], value_of(rank, 0, k, it), count_of(k), s);
        if (reduce(rank, comm, buf[0], 0, s, &h))
            return 1;
        PT_CU(cuEventRecord(e, s));
        PT_CU(cuStreamWaitEvent(c, e, 0));
        if (late && emu_held_now(&h) > 0)
            (*behind)++;
        if (late)
            emuNcclSetLatency(30000);
        if (reduce(rank, comm, buf[1], 1, s, &h))
            return 1;
        if (late)
            emuFaultArm("cuStreamWaitValue32:1");
        chk = (struct read_check){(const float *)(uintptr_t)buf[0], sum_of(nranks, 0, 0, it), 0, 0};
        PT_CU(cuLaunchHostFunc(c, read_fn, &chk));
        PT_CU(cuStreamSynchronize(c));
        PT_CU(cuStreamSynchronize(s));
        emuFaultArm("");
        emuNcclSetLatency(0);
        if (!chk.ran || chk.bad)
            FAIL("gatefail: iteration %d: a read behind call 0 saw it %s", it,
                 chk.ran ? "before its all-reduce ran" : "never");
    }
    return 0;
}

/* Creates n streams, then destroys them all (n distinct handles); the growth of the heap in use,
 * bytes. */
static long churn_streams(int n)
{
    struct mallinfo2 before = mallinfo2(), after;
    CUstream *t = calloc((size_t)n, sizeof(*t));

    if (!t)
        return -1;
    for (int i = 0; i < n; i++)
        PT_CU(cuStreamCreate(&t[i], CU_STREAM_NON_BLOCKING));
    for (int i = 0; i < n; i++)
        PT_CU(cuStreamDestroy(t[i]));
    free(t);
    after = mallinfo2();
    return (long)after.uordblks - (long)before.uordblks;
}

static int streams(int rank, int nranks, ncclComm_t comm, long *behind)
{
    CUstream s;
    CUdeviceptr buf[2];
    struct emu_held_count h = {.comm = comm};

    PT_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    for (int k = 0; k < 2; k++)
        PT_CU(cuMemAlloc(&buf[k], COUNT * sizeof(float)));
    for (int it = 0; it < ITERS; it++) {
        long grew = 0;
        for (int k = 0; k < 2; k++)
            pt_fill(buf[k], value_of(rank, 0, k, it), count_of(k), s);
        if (it == 10)
            grew = churn_streams(20000);
        if (reduce(rank, comm, buf[0], 0, s, &h))
            return 1;
        if (it == 50) {
            if (emu_held_now(&h) > 0)
                (*behind)++;
            grew = churn_streams(20000);
        }
        if (grew > (1L << 20))
            FAIL("streams: iteration %d: 20000 streams made and destroyed left %ld bytes on the "
                 "heap",
                 it, grew);
        if (reduce(rank, comm, buf[1], 1, s, &h))
            return 1;
        PT_CU(cuStreamSynchronize(s));
        for (int k = 0; k < 2; k++) {
            const float *p = (const float *)(uintptr_t)buf[k];
            for (size_t i = 0; i < count_of(k); i++)
                if (p[i] != sum_of(nranks, 0, k, it))
                    FAIL("streams: iteration %d call %d element %zu: %g", it, k, i, (double)p[i]);
        }
    }
    return 0;
}

struct ptds_side {
    CUcontext ctx;
    CUevent r, e;
    struct read_check chk;
    CUresult rc;
};

static void *ptds_thread(void *arg)
{
    struct ptds_side *p = arg;

    if ((p->rc = cuCtxSetCurrent(p->ctx)) == CUDA_SUCCESS &&
        (p->rc = cuStreamWaitEvent(CU_STREAM_PER_THREAD, p->r, 0)) == CUDA_SUCCESS &&
        (p->rc = cuLaunchHostFunc(CU_STREAM_PER_THREAD, read_fn, &p->chk)) == CUDA_SUCCESS &&
        (p->rc = cuEventRecord(p->e, CU_STREAM_PER_THREAD)) == CUDA_SUCCESS)
        p->rc = cuStreamSynchronize(CU_STREAM_PER_THREAD);
    return NULL;
}

static int ptds(int rank, int nranks, ncclComm_t comm, long *behind)
{
    CUstream s;
    CUdeviceptr buf[2];
    struct emu_held_count h = {.comm = comm};
    struct ptds_side side = {0};

    PT_CU(cuCtxGetCurrent(&side.ctx));
    PT_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    PT_CU(cuEventCreate(&side.r, CU_EVENT_DISABLE_TIMING));
    PT_CU(cuEventCreate(&side.e, CU_EVENT_DISABLE_TIMING));
    for (int k = 0; k < 2; k++)
        PT_CU(cuMemAlloc(&buf[k], COUNT * sizeof(float)));
    for (int it = 0; it < ITERS; it++) {
        pthread_t t;
        for (int k = 0; k < 2; k++)
            pt_fill(buf[k], value_of(rank, 0, k, it), count_of(k), s);
        if (reduce(rank, comm, buf[0], 0, s, &h))
            return 1;
        if (emu_held_now(&h) > 0)
            (*behind)++;
        PT_CU(cuEventRecord(side.r, s));
        side.chk =
            (struct read_check){(const float *)(uintptr_t)buf[0], sum_of(nranks, 0, 0, it), 0, 0};
        if (pthread_create(&t, NULL, ptds_thread, &side))
            FAIL("ptds: pthread_create");
        sleep_ms(10);
        if (reduce(rank, comm, buf[1], 1, s, &h))
            return 1;
        pthread_join(t, NULL);
        PT_CU(cuStreamSynchronize(s));
        if (side.rc != CUDA_SUCCESS)
            FAIL("ptds: iteration %d: the second thread's CUDA call failed (%d)", it, (int)side.rc);
        if (!side.chk.ran || side.chk.bad)
            FAIL("ptds: iteration %d: the second thread's read saw call 0 %s", it,
                 side.chk.ran ? "before its all-reduce ran" : "never");
    }
    return 0;
}

typedef ncclResult_t (*allreduce_fn)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t,
                                     ncclComm_t, cudaStream_t);

static int newcoll(int rank, int nranks, ncclComm_t comm, long *behind)
{
    CUstream s, c;
    CUevent e;
    CUdeviceptr buf[2], out;
    struct emu_held_count h = {.comm = comm};
    allreduce_fn future = (allreduce_fn)dlsym(RTLD_DEFAULT, "ncclAllReduceFuture");

    if (!future)
        FAIL("newcoll: the NCCL has no ncclAllReduceFuture (not the emulated one?)");
    PT_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    PT_CU(cuStreamCreate(&c, CU_STREAM_NON_BLOCKING));
    PT_CU(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    PT_CU(cuMemAlloc(&out, COUNT * sizeof(float)));
    for (int k = 0; k < 2; k++)
        PT_CU(cuMemAlloc(&buf[k], COUNT * sizeof(float)));
    for (int it = 0; it < ITERS; it++) {
        const float *o = (const float *)(uintptr_t)out;
        float want = (float)nranks * sum_of(nranks, 0, 0, it);
        ncclResult_t nrc;
        for (int k = 0; k < 2; k++)
            pt_fill(buf[k], value_of(rank, 0, k, it), count_of(k), s);
        if (reduce(rank, comm, buf[0], 0, s, &h))
            return 1;
        if (emu_held_now(&h) > 0)
            (*behind)++;
        PT_CU(cuEventRecord(e, s));
        PT_CU(cuStreamWaitEvent(c, e, 0));
        nrc = future((void *)buf[0], (void *)out, count_of(0), ncclFloat32, ncclSum, comm, c);
        if (nrc != ncclSuccess)
            FAIL("newcoll: ncclAllReduceFuture: %s", ncclGetErrorString(nrc));
        if (reduce(rank, comm, buf[1], 1, s, &h))
            return 1;
        PT_CU(cuStreamSynchronize(c));
        PT_CU(cuStreamSynchronize(s));
        for (size_t i = 0; i < count_of(0); i++)
            if (o[i] != want)
                FAIL("newcoll: iteration %d element %zu: %g, expected %g", it, i, (double)o[i],
                     (double)want);
    }
    return 0;
}

static int rank_main(int rank, int nranks, const ncclUniqueId *id)
{
    CUcontext ctx;
    ncclComm_t comm;
    long behind = 0;
    int rc;

    pt_rank_setup(rank, nranks, id, &ctx, &comm);
    if (!strcmp(g_scenario, "twocomm"))
        rc = twocomm(rank, nranks, comm, &behind);
    else if (!strcmp(g_scenario, "gatefail"))
        rc = gatefail(rank, nranks, comm, &behind);
    else if (!strcmp(g_scenario, "streams"))
        rc = streams(rank, nranks, comm, &behind);
    else if (!strcmp(g_scenario, "ptds"))
        rc = ptds(rank, nranks, comm, &behind);
    else
        rc = newcoll(rank, nranks, comm, &behind);
    if (rc)
        return rc;
    if (behind == 0 && strcmp(g_scenario, "newcoll"))
        FAIL("%s: nothing was held where the test needs it: nothing tested", g_scenario);
    PT_NCCL(ncclCommDestroy(comm));
    printf("rank %d: %s: %d iterations exact, %ld reads behind held calls\n", rank, g_scenario,
           ITERS, behind);
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv)
{
    g_scenario = argc > 1 ? argv[1] : "";
    if (strcmp(g_scenario, "twocomm") && strcmp(g_scenario, "gatefail") &&
        strcmp(g_scenario, "newcoll") && strcmp(g_scenario, "streams") &&
        strcmp(g_scenario, "ptds")) {
        fprintf(stderr, "usage: hold-local twocomm|gatefail|newcoll|streams|ptds\n");
        return 2;
    }
    return pt_run_ranks(2, rank_main);
}
