/* Calls made on a capturing stream pass through (invariant 4): after warm-up iterations in which
 * the preload schedules (block mode), the last iteration's first three calls are made (and held)
 * and then the stream is captured and an ncclAllReduce is issued; the preload must release what
 * it holds and hand the call to NCCL inside the capture (its TRACE lines say so), and the capture
 * must end cleanly. One rank. */
#include <emu_cuda.h>

#include "pt_common.h"

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
    PT_NCCL(ncclCommDestroy(comm));
    return 0;
}

int main(void)
{
    return pt_run_ranks(1, pt_rank);
}
