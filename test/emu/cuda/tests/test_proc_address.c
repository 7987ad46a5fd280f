/* cuGetProcAddress resolves plain names to working functions; plain and versioned exports both
 * exist (checked with dlsym). */
#include <dlfcn.h>
#include <string.h>

#include "emu_test.h"

typedef CUresult (*init_fn)(unsigned int);
typedef CUresult (*stream_create_fn)(CUstream *, unsigned int);
typedef CUresult (*stream_destroy_fn)(CUstream);
typedef CUresult (*mem_alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*mem_free_fn)(CUdeviceptr);
typedef CUresult (*ctx_create_v1_fn)(CUcontext *, unsigned int, CUdevice);

int main(void)
{
    void *fn = NULL;
    CUdriverProcAddressQueryResult q = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    /* works before cuInit */
    OK(cuGetProcAddress("cuInit", &fn, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &q));
    CHECK(fn && q == CU_GET_PROC_ADDRESS_SUCCESS);
    OK(((init_fn)fn)(0));
    CHECK_CU(cuGetProcAddress("cuNoSuchThing", &fn, 13000, 0, &q), CUDA_ERROR_NOT_FOUND);
    CHECK(fn == NULL && q == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);

    test_setup();
    OK(cuGetProcAddress("cuStreamCreate", &fn, 13000, 0, &q));
    stream_create_fn create = (stream_create_fn)fn;
    OK(cuGetProcAddress("cuStreamDestroy", &fn, 13000, 0, &q));
    CHECK(fn == (void *)cuStreamDestroy_v2);
    stream_destroy_fn destroy = (stream_destroy_fn)fn;
    CUstream s;
    OK(create(&s, 0));
    OK(destroy(s));
    OK(cuGetProcAddress("cuMemAlloc", &fn, 13000, 0, &q));
    CHECK(fn == (void *)cuMemAlloc_v2);
    OK(cuGetProcAddress("cuCtxCreate", &fn, 13000, 0, &q));
    CHECK(fn == (void *)cuCtxCreate_v4);
    OK(cuGetProcAddress("cuStreamGetCaptureInfo", &fn, 13000, 0, &q));
    CHECK(fn == (void *)cuStreamGetCaptureInfo_v3);

    const char *names[] = {"cuInit",
                           "cuMemAlloc",
                           "cuMemAlloc_v2",
                           "cuMemFree",
                           "cuMemFree_v2",
                           "cuCtxCreate",
                           "cuCtxCreate_v4",
                           "cuStreamDestroy",
                           "cuStreamDestroy_v2",
                           "cuStreamWaitValue32",
                           "cuStreamWaitValue32_v2",
                           "cuStreamWriteValue32",
                           "cuStreamWriteValue32_v2",
                           "cuStreamGetCaptureInfo",
                           "cuStreamGetCaptureInfo_v2",
                           "cuStreamGetCaptureInfo_v3",
                           "cuStreamBeginCapture",
                           "cuStreamBeginCapture_v2",
                           "cuEventDestroy",
                           "cuEventDestroy_v2",
                           "cuEventElapsedTime",
                           "cuEventElapsedTime_v2",
                           "cuGetProcAddress",
                           "cuGetProcAddress_v2",
                           "cuDevicePrimaryCtxRelease",
                           "cuDevicePrimaryCtxRelease_v2",
                           "cuMemHostGetDevicePointer",
                           "cuMemHostGetDevicePointer_v2",
                           "cuMemcpyHtoD",
                           "cuMemcpyHtoD_v2",
                           "cuMemcpyDtoH",
                           "cuMemcpyDtoH_v2",
                           "cuMemcpyHtoDAsync",
                           "cuMemcpyHtoDAsync_v2",
                           "cuMemcpyDtoHAsync",
                           "cuMemcpyDtoHAsync_v2",
                           "cuMemcpyDtoDAsync",
                           "cuMemcpyDtoDAsync_v2",
                           "cuCtxDestroy",
                           "cuCtxDestroy_v2",
                           "emuLaunchKernel",
                           "emuStreamOpsExecuted"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (!dlsym(RTLD_DEFAULT, names[i])) {
            fprintf(stderr, "missing export %s\n", names[i]);
            return 1;
        }
    }
    /* internals are hidden */
    CHECK(dlsym(RTLD_DEFAULT, "emu_g") == NULL);
    CHECK(dlsym(RTLD_DEFAULT, "emu_wait") == NULL);

    /* the plain exports work: same-signature ones forward, cuCtxCreate keeps its legacy form */
    mem_alloc_fn ma = (mem_alloc_fn)dlsym(RTLD_DEFAULT, "cuMemAlloc");
    mem_free_fn mf = (mem_free_fn)dlsym(RTLD_DEFAULT, "cuMemFree");
    CUdeviceptr d;
    OK(ma(&d, 128));
    OK(mf(d));
    ctx_create_v1_fn cc = (ctx_create_v1_fn)dlsym(RTLD_DEFAULT, "cuCtxCreate");
    CUcontext c;
    OK(cc(&c, 0, 0));
    OK(cuCtxDestroy(c));
    OK(cuGetProcAddress("cuCtxCreate", &fn, 11000, 0, &q));
    CHECK(fn == (void *)cc);
    printf("PASS\n");
    return 0;
}
