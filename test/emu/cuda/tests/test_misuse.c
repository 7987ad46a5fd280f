/* Misuse returns the real driver's error codes. */
#include <stdint.h>
#include <string.h>

#include "emu_test.h"

int main(void)
{
    CUstream s = NULL;
    CUevent e = NULL;
    CUcontext ctx = NULL;
    CUdeviceptr d = 0;
    int n = -1;
    const char *str = NULL;

    /* before cuInit */
    OK(cuDriverGetVersion(&n));
    CHECK(n == 13000);
    OK(cuGetErrorName(CUDA_ERROR_NOT_READY, &str));
    CHECK(strcmp(str, "CUDA_ERROR_NOT_READY") == 0);
    OK(cuGetErrorString(CUDA_ERROR_INVALID_VALUE, &str));
    CHECK(str && *str);
    CHECK_CU(cuGetErrorName((CUresult)123456, &str), CUDA_ERROR_INVALID_VALUE);
    CHECK_CU(cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
    CHECK_CU(cuStreamCreate(&s, 0), CUDA_ERROR_NOT_INITIALIZED);
    CHECK_CU(cuMemAlloc(&d, 16), CUDA_ERROR_NOT_INITIALIZED);
    CHECK_CU(cuEventCreate(&e, 0), CUDA_ERROR_NOT_INITIALIZED);
    CHECK_CU(cuStreamSynchronize(NULL), CUDA_ERROR_NOT_INITIALIZED);
    CHECK_CU(cuCtxGetCurrent(&ctx), CUDA_ERROR_NOT_INITIALIZED);
    CHECK_CU(cuInit(1), CUDA_ERROR_INVALID_VALUE);

    OK(cuInit(0));
    OK(cuDeviceGetCount(&n));
    CHECK(n == 1); /* EMU_CUDA_DEVICES unset in this test */
    CUdevice dev;
    CHECK_CU(cuDeviceGet(&dev, 1), CUDA_ERROR_INVALID_DEVICE);
    CHECK_CU(cuDeviceGet(NULL, 0), CUDA_ERROR_INVALID_VALUE);
    OK(cuDeviceGet(&dev, 0));
    char name[64];
    OK(cuDeviceGetName(name, sizeof(name), dev));

    /* no current context */
    OK(cuCtxGetCurrent(&ctx));
    CHECK(ctx == NULL);
    CHECK_CU(cuStreamCreate(&s, 0), CUDA_ERROR_INVALID_CONTEXT);
    CHECK_CU(cuMemAlloc(&d, 16), CUDA_ERROR_INVALID_CONTEXT);
    CHECK_CU(cuEventCreate(&e, 0), CUDA_ERROR_INVALID_CONTEXT);
    CHECK_CU(cuStreamSynchronize(NULL), CUDA_ERROR_INVALID_CONTEXT);
    CHECK_CU(cuCtxSynchronize(), CUDA_ERROR_INVALID_CONTEXT);
    CHECK_CU(cuCtxGetDevice(&dev), CUDA_ERROR_INVALID_CONTEXT);

    /* created context: current, then destroyed */
    CUcontext c2;
    OK(cuCtxCreate(&c2, NULL, 0, dev));
    OK(cuCtxGetCurrent(&ctx));
    CHECK(ctx == c2);
    OK(cuStreamCreate(&s, 0));
    OK(cuCtxDestroy(c2));
    CHECK_CU(cuStreamQuery(s), CUDA_ERROR_INVALID_HANDLE); /* destroyed with its context */
    CHECK_CU(cuCtxSetCurrent(c2), CUDA_ERROR_INVALID_CONTEXT);
    CHECK_CU(cuCtxDestroy(c2), CUDA_ERROR_INVALID_CONTEXT);

    test_setup();
    OK(cuCtxGetDevice(&dev));
    CHECK(dev == 0);

    /* invalid value */
    CHECK_CU(cuStreamCreate(NULL, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_CU(cuStreamCreate(&s, 0x100), CUDA_ERROR_INVALID_VALUE);
    CHECK_CU(cuEventCreate(NULL, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_CU(cuEventCreate(&e, CU_EVENT_INTERPROCESS), CUDA_ERROR_INVALID_VALUE);
    CHECK_CU(cuMemAlloc(NULL, 16), CUDA_ERROR_INVALID_VALUE);
    CHECK_CU(cuMemAlloc(&d, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_CU(cuCtxGetCurrent(NULL), CUDA_ERROR_INVALID_VALUE);
    CHECK_CU(cuLaunchHostFunc(NULL, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
    CHECK_CU(cuMemFree((CUdeviceptr)(uintptr_t)&n), CUDA_ERROR_INVALID_VALUE);
    CHECK_CU(cuMemFree(0), CUDA_ERROR_INVALID_VALUE);
    CHECK_CU(cuMemFreeHost(&n), CUDA_ERROR_INVALID_VALUE);
    CHECK_CU(cuMemHostGetDevicePointer(&d, &n, 0), CUDA_ERROR_INVALID_VALUE);
    CUdeviceptr dm;
    OK(cuMemAlloc(&dm, 64));
    CHECK_CU(cuMemFree(dm + 8), CUDA_ERROR_INVALID_VALUE);                    /* interior pointer */
    CHECK_CU(cuMemFreeHost((void *)(uintptr_t)dm), CUDA_ERROR_INVALID_VALUE); /* wrong kind */
    OK(cuMemFree(dm));
    CHECK_CU(cuMemFree(dm), CUDA_ERROR_INVALID_VALUE); /* double free */
    unsigned mt;
    CHECK_CU(
        cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)&n),
        CUDA_ERROR_INVALID_VALUE);

    /* invalid handles */
    OK(cuStreamCreate(&s, 0));
    OK(cuEventCreate(&e, 0));
    OK(cuStreamDestroy(s));
    OK(cuEventDestroy(e));
    CHECK_CU(cuStreamDestroy(s), CUDA_ERROR_INVALID_HANDLE);
    CHECK_CU(cuStreamSynchronize(s), CUDA_ERROR_INVALID_HANDLE);
    CHECK_CU(cuStreamQuery(s), CUDA_ERROR_INVALID_HANDLE);
    CHECK_CU(cuLaunchHostFunc(s, (CUhostFn)(uintptr_t)1, NULL), CUDA_ERROR_INVALID_HANDLE);
    CHECK_CU(cuEventDestroy(e), CUDA_ERROR_INVALID_HANDLE);
    CHECK_CU(cuEventQuery(e), CUDA_ERROR_INVALID_HANDLE);
    CHECK_CU(cuEventRecord(e, NULL), CUDA_ERROR_INVALID_HANDLE);
    CHECK_CU(cuEventSynchronize(e), CUDA_ERROR_INVALID_HANDLE);
    CHECK_CU(cuStreamWaitEvent(NULL, e, 0), CUDA_ERROR_INVALID_HANDLE);
    CHECK_CU(cuEventQuery(NULL), CUDA_ERROR_INVALID_HANDLE);
    CHECK_CU(cuStreamDestroy(NULL), CUDA_ERROR_INVALID_HANDLE);

    /* not ready */
    OK(cuStreamCreate(&s, 0));
    OK(cuEventCreate(&e, 0));
    uint32_t *gate = test_gate_new();
    test_gate_close(s, gate);
    OK(cuEventRecord(e, s));
    CHECK_CU(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
    CHECK_CU(cuEventQuery(e), CUDA_ERROR_NOT_READY);
    test_gate_open(gate);
    OK(cuStreamSynchronize(s));
    OK(cuStreamQuery(s));
    OK(cuEventQuery(e));
    OK(cuEventDestroy(e));
    OK(cuStreamDestroy(s));
    OK(cuMemFreeHost(gate));
    printf("PASS\n");
    return 0;
}
