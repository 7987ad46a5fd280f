/* preload.cuda_dlsym: the way the CUDA runtime and NCCL reach the driver, dlopen("libcuda.so.1")
 * and dlsym. Under the preload, dlsym of a wrapped name in the driver's handle answers the
 * preload's wrapper (and the wrapper reaches the driver), a name that is not wrapped answers the
 * driver's own function, a wrapped name the driver lacks answers NULL, and RTLD_NEXT stays relative
 * to the object that calls dlsym (this program: the next object is the preloaded library). This
 * program does not link libcuda. */
#define _GNU_SOURCE
#include <cuda.h>
#include <unistd.h>

#include "cuda_hook_test.h"

#define SYM(h, name) dlsym((h), #name)

int main(void)
{
    const char *P = "libprophet.so", *D = "libcuda.so";
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    CUresult (*init)(unsigned), (*devget)(CUdevice *, int), (*retain)(CUcontext *, CUdevice);
    CUresult (*setcur)(CUcontext), (*evcreate)(CUevent *, unsigned);
    CUresult (*screate)(CUstream *, unsigned), (*record)(CUevent, CUstream);
    CUresult (*ssync)(CUstream), (*query)(CUevent), (*sdestroy)(CUstream);
    CUdevice dev;
    CUcontext ctx;
    CUstream s;
    CUevent e;

    CHECK(h);
    /* wrapped names: the preload's wrapper of that very symbol */
    const char *wrapped[] = {"cuEventRecord",          "cuEventRecord_ptsz", "cuStreamWaitEvent",
                             "cuStreamWaitEvent_ptsz", "cuMemcpyHtoD_v2",    "cuMemcpyHtoD_v2_ptds",
                             "cuStreamDestroy_v2",     "cuStreamDestroy",    "cuLaunchKernel",
                             "cuLaunchHostFunc",       "cuCtxSynchronize",   "cuGetProcAddress",
                             "cuGetProcAddress_v2",    "cuMemFree_v2",       "cuStreamSynchronize"};
    for (size_t i = 0; i < sizeof(wrapped) / sizeof(wrapped[0]); i++)
        CHECK_IS(dlsym(h, wrapped[i]), P, wrapped[i]);
    /* the global scope too, once a driver is loaded */
    CHECK_IS(dlsym(RTLD_DEFAULT, "cuEventRecord"), P, "cuEventRecord");
    /* names that are not wrapped: the driver's own */
    CHECK_IS(dlsym(h, "cuEventCreate"), P, "cuEventCreate"); /* interprocess events are told */
    const char *plain[] = {"cuInit", "cuMemAlloc_v2", "cuDeviceGet", "cuStreamGetFlags",
                           "cuCtxGetCurrent"};
    for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++)
        CHECK_IS(dlsym(h, plain[i]), D, plain[i]);
    /* wrapped, but not in this driver: NULL, as without the preload */
    CHECK(dlsym(h, "cuLaunchKernelEx_ptsz") == NULL);
    CHECK(dlsym(h, "cuMemAllocAsync_ptsz") == NULL);
    /* unknown names: NULL and a dlerror() message, from glibc */
    dlerror();
    CHECK(dlsym(h, "cuNoSuchEntryPoint") == NULL && dlerror() != NULL);
    CHECK(dlsym(h, "not_a_cuda_name") == NULL);

    /* RTLD_NEXT from this program: the next object defining "dlsym" is the preloaded library
     * (glibc's comes after it); relative to the preload it would be glibc's */
    CHECK_IS(dlsym(RTLD_NEXT, "dlsym"), P, "dlsym");
    CHECK(dlsym(RTLD_NEXT, "getpid") == (void *)getpid);
    CHECK(dlsym(RTLD_DEFAULT, "getpid") == (void *)getpid);

    /* the wrappers reach the driver */
    *(void **)&init = SYM(h, cuInit);
    *(void **)&devget = SYM(h, cuDeviceGet);
    *(void **)&retain = SYM(h, cuDevicePrimaryCtxRetain);
    *(void **)&setcur = SYM(h, cuCtxSetCurrent);
    *(void **)&evcreate = SYM(h, cuEventCreate);
    *(void **)&screate = SYM(h, cuStreamCreate);
    *(void **)&record = SYM(h, cuEventRecord);
    *(void **)&ssync = SYM(h, cuStreamSynchronize);
    *(void **)&query = SYM(h, cuEventQuery);
    *(void **)&sdestroy = SYM(h, cuStreamDestroy_v2);
    CU_OK(init(0));
    CU_OK(devget(&dev, 0));
    CU_OK(retain(&ctx, dev));
    CU_OK(setcur(ctx));
    CU_OK(evcreate(&e, 0));
    CU_OK(screate(&s, 0));
    CU_OK(record(e, s));
    CU_OK(ssync(s));
    CU_OK(query(e));
    CHECK(sdestroy((CUstream)(uintptr_t)0x1234) ==
          CUDA_ERROR_INVALID_HANDLE); /* the driver's check */
    CU_OK(sdestroy(s));
    puts("cuda_dlsym: wrappers for wrapped names, the driver's own otherwise, RTLD_NEXT exact");
    return 0;
}
