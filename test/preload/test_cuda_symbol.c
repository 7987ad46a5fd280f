/* preload.cuda_symbol: a program linked to libcuda.so.1 (the emulated driver) calls the wrapped
 * entry points by symbol. Under LD_PRELOAD=libprophet.so each symbol it calls is the preload's
 * wrapper (dladdr names libprophet.so), and every call reaches the driver: the copies, memsets,
 * host function, event record/wait and synchronisations below produce the driver's results. */
#define _GNU_SOURCE
#include <cuda.h>
#include <stdint.h>

#include "cuda_hook_test.h"
#include "emu_cuda.h"

static void add_one(void *arg)
{
    unsigned char *p = arg;
    for (int i = 0; i < 64; i++)
        p[i]++;
}

int main(void)
{
    const char *P = "libprophet.so";
    CUdevice dev;
    CUcontext ctx;
    CUstream a, b;
    CUevent e;
    CUdeviceptr d;
    unsigned char host[64], back[64];

    /* the addresses the program calls (macros: cuMemcpyHtoD is cuMemcpyHtoD_v2, ...) */
    CHECK_IS(&cuEventRecord, P, "cuEventRecord");
    CHECK_IS(&cuEventRecordWithFlags, P, "cuEventRecordWithFlags");
    CHECK_IS(&cuStreamWaitEvent, P, "cuStreamWaitEvent");
    CHECK_IS(&cuEventQuery, P, "cuEventQuery");
    CHECK_IS(&cuStreamQuery, P, "cuStreamQuery");
    CHECK_IS(&cuEventSynchronize, P, "cuEventSynchronize");
    CHECK_IS(&cuStreamSynchronize, P, "cuStreamSynchronize");
    CHECK_IS(&cuCtxSynchronize, P, "cuCtxSynchronize");
    CHECK_IS(&cuEventElapsedTime, P, "cuEventElapsedTime_v2");
    CHECK_IS(&cuEventDestroy, P, "cuEventDestroy_v2");
    CHECK_IS(&cuStreamDestroy, P, "cuStreamDestroy_v2");
    CHECK_IS(&cuStreamCreate, P, "cuStreamCreate");
    CHECK_IS(&cuLaunchHostFunc, P, "cuLaunchHostFunc");
    CHECK_IS(&cuLaunchKernel, P, "cuLaunchKernel");
    CHECK_IS(&cuMemcpyHtoD, P, "cuMemcpyHtoD_v2");
    CHECK_IS(&cuMemcpyDtoHAsync, P, "cuMemcpyDtoHAsync_v2");
    CHECK_IS(&cuMemsetD8Async, P, "cuMemsetD8Async");
    CHECK_IS(&cuStreamWaitValue32, P, "cuStreamWaitValue32_v2");
    CHECK_IS(&cuStreamWriteValue32, P, "cuStreamWriteValue32_v2");
    CHECK_IS(&cuMemFree, P, "cuMemFree_v2");
    CHECK_IS(&cuStreamBeginCapture, P, "cuStreamBeginCapture_v2");
    CHECK_IS(&cuStreamEndCapture, P, "cuStreamEndCapture");
    CHECK_IS(&cuEventCreate, P, "cuEventCreate"); /* interprocess events are told */
    /* not wrapped: the driver's own */
    CHECK_IS(&cuInit, "libcuda.so", "cuInit");
    CHECK_IS(&cuDeviceGet, "libcuda.so", "cuDeviceGet");

    /* the calls reach the driver */
    CU_OK(cuInit(0));
    CU_OK(cuDeviceGet(&dev, 0));
    CU_OK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CU_OK(cuCtxSetCurrent(ctx));
    CU_OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    CU_OK(cuEventCreate(&e, CU_EVENT_DEFAULT));
    CU_OK(cuMemAlloc(&d, sizeof(host)));
    for (int i = 0; i < 64; i++)
        host[i] = (unsigned char)i;
    uint64_t ops0 = emuStreamOpsExecuted(a) + emuStreamOpsExecuted(b);
    CU_OK(cuMemcpyHtoD(d, host, sizeof(host)));                /* synchronous */
    CU_OK(cuLaunchHostFunc(a, add_one, (void *)(uintptr_t)d)); /* d[i] = i + 1 */
    CU_OK(cuEventRecord(e, a));
    CU_OK(cuStreamWaitEvent(b, e, 0));
    CU_OK(cuMemsetD8Async(d + 32, 7, 32, b)); /* after the host function */
    CU_OK(cuMemcpyDtoHAsync(back, d, sizeof(back), b));
    CU_OK(cuStreamSynchronize(b));
    CU_OK(cuEventSynchronize(e));
    CHECK(cuEventQuery(e) == CUDA_SUCCESS && cuStreamQuery(a) == CUDA_SUCCESS);
    CU_OK(cuCtxSynchronize());
    for (int i = 0; i < 64; i++)
        CHECK(back[i] == (i < 32 ? i + 1 : 7));
    CHECK(emuStreamOpsExecuted(a) + emuStreamOpsExecuted(b) >= ops0 + 5);
    CU_OK(cuEventDestroy(e));
    CU_OK(cuStreamDestroy(a));
    CU_OK(cuStreamDestroy(b));
    CU_OK(cuMemFree(d));
    puts("cuda_symbol: every entry point checked is the preload's wrapper; results exact");
    return 0;
}
