/* Invariant 2 on the emulated cluster (2 ranks): work the caller enqueues after an intercepted
 * call sees its result. Usage: preload-stream-order each|last|other [ITERS]
 *   each: a host function enqueued right after EVERY call checks that call's buffer (real work
 *         behind a held call: the default mode gates the stream, blocks are single calls).
 *   last: a host function enqueued after the LAST call of each iteration checks every buffer of
 *         the iteration (the calls are consecutive: the default mode merges them).
 *  other: after EVERY call an event is recorded on its stream and a second stream waits for it;
 *         the host function that checks the call's buffer runs on that second stream (a
 *         consumer on another stream: the default mode gates that stream behind the held call).
 * Each iteration all-reduces K in-place buffers of different sizes on one stream; values are
 * written on that stream (cuMemsetD32Async) at the iteration's start, so the expected sums are
 * exact.
 * A third argument "group" puts calls 2 and 3 of each iteration into a nested user group
 * (ncclGroupStart x2 ... ncclGroupEnd x2) and closes and reopens an empty group first, as PyTorch
 * does around communicator creation; the checks of those calls follow the outer ncclGroupEnd.
 * PT_PAUSE_US=N (with PT_PAUSE_FROM=I, default 0): the host sleeps N us after each call of the
 * iterations from I on (a slow host: the stall guard's tests). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pt_check.h"

#define K 6
static const size_t pt_counts[K] = {1024, 64, 4096, 16, 2048, 256};

static int check_each, check_other, use_group;
static int iters = 40;
static long pause_us, pause_from;
static float pt_value(int rank, int it, int k)
{
    return (float)((rank + 1) * (it % 7 + 1) + k);
}

static int pt_rank(int rank, int nranks, const ncclUniqueId *id)
{
    CUcontext ctx;
    ncclComm_t comm;
    CUstream s, s2;
    CUevent ev[K];
    CUdeviceptr buf[K];
    struct pt_check *chk = calloc((size_t)iters * K, sizeof(*chk));

    if (use_group) { /* an empty group closed before the comm exists */
        PT_NCCL(ncclGroupStart());
        PT_NCCL(ncclGroupEnd());
    }
    pt_rank_setup(rank, nranks, id, &ctx, &comm);
    if (use_group) { /* and reopened/closed after */
        PT_NCCL(ncclGroupStart());
        PT_NCCL(ncclGroupEnd());
    }
    PT_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    PT_CU(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    for (int k = 0; k < K; k++)
        PT_CU(cuEventCreate(&ev[k], CU_EVENT_DISABLE_TIMING));
    for (int k = 0; k < K; k++)
        PT_CU(cuMemAlloc(&buf[k], pt_counts[k] * sizeof(float)));
    for (int it = 0; it < iters; it++) {
        for (int k = 0; k < K; k++)
            pt_fill(buf[k], pt_value(rank, it, k), pt_counts[k], s);
        for (int k = 0; k < K; k++) {
            float sum = 0;
            struct pt_check *c = &chk[it * K + k];

            for (int r = 0; r < nranks; r++)
                sum += pt_value(r, it, k);
            int grouped = use_group && (k == 2 || k == 3);
            if (grouped && k == 2) {
                PT_NCCL(ncclGroupStart());
                PT_NCCL(ncclGroupStart());
            }
            PT_NCCL(ncclAllReduce((void *)buf[k], (void *)buf[k], pt_counts[k], ncclFloat, ncclSum,
                                  comm, s));
            if (grouped && k == 3) {
                PT_NCCL(ncclGroupEnd());
                PT_NCCL(ncclGroupEnd());
            }
            *c = (struct pt_check){(const float *)(uintptr_t)buf[k], pt_counts[k], sum};
            if (check_each && grouped && k == 3) {
                PT_CU(cuLaunchHostFunc(s, pt_check_fn, c - 1));
                PT_CU(cuLaunchHostFunc(s, pt_check_fn, c));
            } else if (check_other && !grouped) {
                PT_CU(cuEventRecord(ev[k], s));
                PT_CU(cuStreamWaitEvent(s2, ev[k], 0));
                PT_CU(cuLaunchHostFunc(s2, pt_check_fn, c));
                /* the next iteration's fill on s must not overwrite the buffer before the check */
                PT_CU(cuEventRecord(ev[k], s2));
                PT_CU(cuStreamWaitEvent(s, ev[k], 0));
            } else if (check_each && !(grouped && k == 2)) {
                PT_CU(cuLaunchHostFunc(s, pt_check_fn, c));
            }
            if (pause_us > 0 && it >= pause_from)
                usleep((useconds_t)pause_us);
        }
        if (!check_each && !check_other)
            for (int k = 0; k < K; k++)
                PT_CU(cuLaunchHostFunc(s, pt_check_fn, &chk[it * K + k]));
        /* the next iteration overwrites the buffers on the same stream: no host wait needed */
    }
    PT_CU(cuStreamSynchronize(s));
    PT_CU(cuStreamSynchronize(s2));
    int bad = pt_check_report(rank, (long)iters * K);
    PT_NCCL(ncclCommDestroy(comm));
    free(chk); /* every host function ran: the stream was synchronised */
    return bad;
}

int main(int argc, char **argv)
{
    if (argc < 2 ||
        (strcmp(argv[1], "each") && strcmp(argv[1], "last") && strcmp(argv[1], "other"))) {
        fprintf(stderr, "usage: %s each|last|other [ITERS] [group]\n", argv[0]);
        return 2;
    }
    check_each = strcmp(argv[1], "each") == 0;
    check_other = strcmp(argv[1], "other") == 0;
    if (argc > 2)
        iters = atoi(argv[2]);
    use_group = argc > 3 && strcmp(argv[3], "group") == 0;
    pause_us = getenv("PT_PAUSE_US") ? atol(getenv("PT_PAUSE_US")) : 0;
    pause_from = getenv("PT_PAUSE_FROM") ? atol(getenv("PT_PAUSE_FROM")) : 0;
    return pt_run_ranks(2, pt_rank);
}
