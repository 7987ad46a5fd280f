/* emu-cuda-bench-ops: host time the emulated driver charges the caller for the stream operations
 * the preload adds to an observed call (issue 12 item 4: compared with a real driver's figures in
 * docs/benchmarks.md, "What the emulated driver charges"). Each case times one driver call with
 * the monotonic clock, N times, and prints the median and the minimum in ns:
 *   record-idle     cuEventRecord (timing event) on a stream with nothing queued
 *   record-busy     cuEventRecord behind an emulated kernel that is still running
 *   record-notiming cuEventRecord of a CU_EVENT_DISABLE_TIMING event, stream idle
 *   wait-event      cuStreamWaitEvent on stream B for an event just recorded on stream A
 *   launch          cuLaunchKernel of an emulated function, stream idle
 * As in the real-GPU benchmark it is compared with, each iteration creates the event, times
 * the call alone and destroys the event; the stream is synchronised outside the timed part.
 * Usage: emu-cuda-bench-ops [--iters N]   (links the emulated libcuda.so.1, never a real one) */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_cuda.h"

#define CK(call)                                                                                   \
    do {                                                                                           \
        CUresult rc_ = (call);                                                                     \
        if (rc_ != CUDA_SUCCESS) {                                                                 \
            fprintf(stderr, "emu-cuda-bench-ops: %s failed (%d)\n", #call, (int)rc_);              \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

enum bench_case { REC_IDLE, REC_BUSY, REC_NOTIMING, WAIT_EVENT, LAUNCH, NCASES };

static const char *const case_name[NCASES] = {"record-idle", "record-busy", "record-notiming",
                                              "wait-event", "launch"};

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static void nothing(void *arg)
{
    (void)arg;
}

static void nothing_kernel(void **params)
{
    (void)params;
}

/* An emulated module with one kernel, as cuModuleLoadData takes it. */
static const struct emuKernelDef kernels[] = {{.name = "nothing", .fn = nothing_kernel}};
static const struct emuModuleImage image = {
    .magic = EMU_MODULE_MAGIC, .nkernels = 1, .kernels = kernels};

/* One timed call of case c; everything it needs is set up and torn down outside the clock. */
static int64_t time_one(enum bench_case c, CUstream a, CUstream b, CUfunction fn)
{
    CUevent e;
    int64_t t0, t1;

    CK(cuEventCreate(&e, c == REC_NOTIMING ? CU_EVENT_DISABLE_TIMING : 0));
    if (c == REC_BUSY)
        CK(emuLaunchKernel(a, 200000, nothing, NULL)); /* 200 us: still running when timed */
    if (c == WAIT_EVENT)
        CK(cuEventRecord(e, a));
    t0 = (int64_t)emuNowNs();
    switch (c) {
    case WAIT_EVENT:
        CK(cuStreamWaitEvent(b, e, 0));
        break;
    case LAUNCH:
        CK(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, a, NULL, NULL));
        break;
    default:
        CK(cuEventRecord(e, a));
        break;
    }
    t1 = (int64_t)emuNowNs();
    CK(cuStreamSynchronize(a));
    CK(cuStreamSynchronize(b));
    CK(cuEventDestroy(e));
    return t1 - t0;
}

int main(int argc, char **argv)
{
    int iters = 20000;
    CUdevice dev;
    CUcontext ctx;
    CUstream a, b;
    CUfunction fn;
    CUmodule mod;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--iters") && i + 1 < argc) {
            iters = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: %s [--iters N]\n", argv[0]);
            return 2;
        }
    }
    if (iters < 1)
        iters = 1;
    int64_t *t = calloc((size_t)iters, sizeof(*t));
    if (!t)
        return 1;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    CK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    CK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    CK(cuModuleLoadData(&mod, &image));
    CK(cuModuleGetFunction(&fn, mod, "nothing"));
    printf("%-16s %10s %10s   (host ns per call, %d calls, emulated driver)\n", "operation",
           "median", "min", iters);
    for (int c = 0; c < NCASES; c++) {
        for (int i = 0; i < iters; i++)
            t[i] = time_one((enum bench_case)c, a, b, fn);
        qsort(t, (size_t)iters, sizeof(*t), cmp_i64);
        printf("%-16s %10lld %10lld\n", case_name[c], (long long)t[iters / 2], (long long)t[0]);
    }
    free(t);
    return 0;
}
