/* Calls made on a capturing stream pass through (invariant 4): after warm-up iterations in which
 * the preload schedules (calls held), the last iteration's first three calls are made (and held)
 * and then the stream is captured and an ncclAllReduce is issued; the preload must release what
 * it holds and hand the call to NCCL inside the capture (its TRACE lines say so), and the capture
 * must end cleanly. One rank.
 * Then two captures in GLOBAL mode (torch.cuda.graph's default), in which the emulated driver, as
 * the real one, refuses an event or stream query or synchronisation from any thread not in
 * RELAXED mode and invalidates the capture: (2) one begun on another stream right after calls
 * were released, their records still in flight, kept open 50 ms (ten of the poller's busy
 * periods): the poller thread's queries must not invalidate it; (3) one kept open while the same
 * thread makes 60 more iterations on the first stream, through a plan agreement (the preload's
 * host wait for the broadcast, on this thread): its waits must not invalidate it either; (4) one
 * during which a second comm makes its first call, which sets it up (pinned host memory, the
 * setup vote's wait): nor that; (5) one around that comm's destroy (the preload waits for its
 * internal stream and collects its records): nor that. preload.capture_gate_fault runs it with a
 * block's gate write failing during (3): the host wait that stands in for the gate must not
 * invalidate the capture either. */
#include <time.h>

#include <emu_cuda.h>

#include "pt_common.h"

static void pt_iteration(ncclComm_t comm, CUstream s, const CUdeviceptr *buf, int from, int to)
{
    for (int k = from; k < to; k++)
        PT_NCCL(
            ncclAllReduce((void *)buf[k], (void *)buf[k], 64u << k, ncclFloat, ncclSum, comm, s));
}

/* Ends the GLOBAL capture on s2 begun by the caller: 0 when it ended cleanly with its call. */
static int pt_end_global_capture(CUstream s2, const char *what)
{
    CUgraph g = NULL;
    size_t nops = 0;
    CUresult rc = cuStreamEndCapture(s2, &g);
    if (rc != CUDA_SUCCESS) {
        const char *name = NULL;
        cuGetErrorName(rc, &name);
        fprintf(stderr, "FAIL: global capture %s: cuStreamEndCapture returned %s\n", what,
                name ? name : "?");
        return 1;
    }
    PT_CU(emuGraphNumOps(g, &nops));
    PT_CU(cuGraphDestroy(g));
    printf("global capture %s: ended cleanly, %zu ops\n", what, nops);
    return nops == 0;
}

static int pt_rank(int rank, int nranks, const ncclUniqueId *id)
{
    CUcontext ctx;
    ncclComm_t comm;
    CUstream s;
    CUdeviceptr buf[4];
    CUgraph g = NULL;
    size_t nops = 0;

    pt_rank_setup(rank, nranks, id, &ctx, &comm);
    PT_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    for (int k = 0; k < 4; k++)
        PT_CU(cuMemAlloc(&buf[k], (64u << k) * sizeof(float)));
    for (int it = 0; it < 30; it++) {
        for (int k = 0; k < 4; k++)
            PT_NCCL(ncclAllReduce((void *)buf[k], (void *)buf[k], 64u << k, ncclFloat, ncclSum,
                                  comm, s));
        PT_CU(cuStreamSynchronize(s));
    }
    for (int k = 0; k < 3; k++) /* held: the fourth call of the iteration has not come */
        PT_NCCL(
            ncclAllReduce((void *)buf[k], (void *)buf[k], 64u << k, ncclFloat, ncclSum, comm, s));
    PT_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    PT_NCCL(ncclAllReduce((void *)buf[0], (void *)buf[0], 64, ncclFloat, ncclSum, comm, s));
    PT_CU(cuStreamEndCapture(s, &g));
    PT_CU(emuGraphNumOps(g, &nops));
    printf("captured graph: %zu ops\n", nops);
    if (nops == 0) {
        fprintf(stderr, "FAIL: the all-reduce did not reach the capture\n");
        return 1;
    }
    PT_CU(cuGraphDestroy(g));

    CUstream s2;
    const struct timespec open_50ms = {0, 50 * 1000 * 1000};
    PT_CU(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    pt_iteration(comm, s, buf, 3, 4);
    PT_CU(cuStreamSynchronize(s));
    for (int it = 0; it < 10; it++) {
        pt_iteration(comm, s, buf, 0, 4);
        PT_CU(cuStreamSynchronize(s));
    }
    /* (2) the next iteration's first call releases the last one's block: in flight, not yet
     * collected by the poller when the capture begins */
    pt_iteration(comm, s, buf, 0, 4);
    pt_iteration(comm, s, buf, 0, 1);
    PT_CU(cuStreamBeginCapture(s2, CU_STREAM_CAPTURE_MODE_GLOBAL));
    PT_NCCL(ncclAllReduce((void *)buf[0], (void *)buf[0], 64, ncclFloat, ncclSum, comm, s2));
    nanosleep(&open_50ms, NULL);
    if (pt_end_global_capture(s2, "with records in flight"))
        return 1;
    pt_iteration(comm, s, buf, 1, 4);
    PT_CU(cuStreamSynchronize(s));
    /* (3) iterations on s, no host synchronisation of the job's (its capture forbids them) */
    PT_CU(cuStreamBeginCapture(s2, CU_STREAM_CAPTURE_MODE_GLOBAL));
    PT_NCCL(ncclAllReduce((void *)buf[0], (void *)buf[0], 64, ncclFloat, ncclSum, comm, s2));
    for (int it = 0; it < 60; it++)
        pt_iteration(comm, s, buf, 0, 4);
    if (pt_end_global_capture(s2, "across 60 iterations"))
        return 1;
    PT_CU(cuStreamSynchronize(s));
    /* (4) a second comm's first call, made during the capture: the preload sets the comm up
     * there (pinned host memory, the setup vote's wait) */
    ncclComm_t comm2;
    ncclUniqueId id2;
    PT_NCCL(ncclGetUniqueId(&id2));
    PT_NCCL(ncclCommInitRank(&comm2, 1, id2, 0));
    PT_CU(cuStreamBeginCapture(s2, CU_STREAM_CAPTURE_MODE_GLOBAL));
    PT_NCCL(ncclAllReduce((void *)buf[0], (void *)buf[0], 64, ncclFloat, ncclSum, comm, s2));
    pt_iteration(comm2, s, buf, 0, 4);
    if (pt_end_global_capture(s2, "across a comm's set-up"))
        return 1;
    /* (5) and its destroy (the preload waits for its internal stream, collects its records) */
    PT_CU(cuStreamBeginCapture(s2, CU_STREAM_CAPTURE_MODE_GLOBAL));
    PT_NCCL(ncclAllReduce((void *)buf[0], (void *)buf[0], 64, ncclFloat, ncclSum, comm, s2));
    PT_NCCL(ncclCommDestroy(comm2));
    if (pt_end_global_capture(s2, "across a comm's destroy"))
        return 1;
    PT_CU(cuStreamSynchronize(s));
    PT_CU(cuStreamDestroy(s2));
    PT_NCCL(ncclCommDestroy(comm));
    return 0;
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0); /* in order with the preload's and the fault's lines */
    return pt_run_ranks(1, pt_rank);
}
