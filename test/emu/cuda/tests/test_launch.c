/* cuModuleLoadData/cuModuleGetFunction/cuLaunchKernel on an emulated module: parameters are
 * copied at launch, the kernel runs in stream order; cuGetProcAddress hands out the _ptsz variant
 * for the per-thread flavour, itself for "cuGetProcAddress", and counts lookups per flavour. */
#include <string.h>

#include "emu_test.h"

static void add_kernel(void **params)
{
    float *d = *(float **)params[0];
    float v = *(float *)params[1];

    d[0] += v;
}

static const struct emuKernelDef defs[] = {
    {.name = "add", .fn = add_kernel, .nparams = 2, .param_size = {sizeof(float *), sizeof(float)}},
};
static const struct emuModuleImage image = {
    .magic = EMU_MODULE_MAGIC, .nkernels = 1, .kernels = defs};

int main(void)
{
    CUmodule mod;
    CUfunction f, g;
    CUstream s;
    CUdeviceptr d;
    void *fn = NULL, *fn2 = NULL;

    test_setup();
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuMemAlloc(&d, sizeof(float)));
    OK(cuMemsetD32(d, 0, 1));
    CHECK_CU(cuModuleLoadData(&mod, "not an image"), CUDA_ERROR_INVALID_IMAGE);
    OK(cuModuleLoadData(&mod, &image));
    CHECK_CU(cuModuleGetFunction(&g, mod, "nope"), CUDA_ERROR_NOT_FOUND);
    OK(cuModuleGetFunction(&f, mod, "add"));

    /* a gate holds the stream; the caller's parameter changes after the launch */
    uint32_t *gate = test_gate_new();
    OK(cuStreamWaitValue32(s, (CUdeviceptr)(uintptr_t)gate, 1, CU_STREAM_WAIT_VALUE_GEQ));
    float *p = (float *)(uintptr_t)d, v = 2.0f;
    void *args[] = {&p, &v};
    OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, args, NULL));
    v = 100.0f;
    OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, args, NULL));
    CHECK(*p == 0.0f); /* not run yet */
    emuWriteValue32(gate, 1);
    OK(cuStreamSynchronize(s));
    CHECK(*p == 102.0f);
    CHECK_CU(cuLaunchKernel(f, 0, 1, 1, 1, 1, 1, 0, s, args, NULL), CUDA_ERROR_INVALID_VALUE);

    /* per-thread flavour: a different entry point that behaves the same */
    OK(cuGetProcAddress_v2("cuLaunchKernel", &fn, 13000, CU_GET_PROC_ADDRESS_LEGACY_STREAM, NULL));
    OK(cuGetProcAddress_v2("cuLaunchKernel", &fn2, 13000,
                           CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, NULL));
    CHECK(fn == (void *)cuLaunchKernel && fn2 && fn2 != fn);
    v = 1.0f;
    OK(((CUresult(*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                     unsigned, CUstream, void **, void **))fn2)(f, 1, 1, 1, 1, 1, 1, 0, NULL, args,
                                                                NULL));
    OK(cuCtxSynchronize());
    CHECK(*p == 103.0f);
    OK(cuGetProcAddress_v2("cuEventRecord", &fn, 13000, CU_GET_PROC_ADDRESS_DEFAULT, NULL));
    OK(cuGetProcAddress_v2("cuEventRecord", &fn2, 13000,
                           CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, NULL));
    CHECK(fn == (void *)cuEventRecord && fn2 != fn);
    CHECK_CU(cuGetProcAddress_v2("cuEventRecord", &fn, 13000, 4, NULL), CUDA_ERROR_INVALID_VALUE);
    /* the self-query */
    OK(cuGetProcAddress_v2("cuGetProcAddress", &fn, 13000, 0, NULL));
    CHECK(fn == (void *)cuGetProcAddress_v2);

    CHECK(emuProcLookups("cuLaunchKernel", 1) == 1 && emuProcLookups("cuLaunchKernel", 2) == 1);
    CHECK(emuProcLookups("cuEventRecord", 0) == 1 && emuProcLookups("cuEventRecord", 2) == 1);
    CHECK(emuProcLookups("cuEventRecord", 1) == 0 && emuProcLookups("cuGetProcAddress", 0) == 1);

    OK(cuModuleUnload(mod));
    CHECK_CU(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, args, NULL), CUDA_ERROR_INVALID_HANDLE);
    OK(cuMemFree(d));
    OK(cuStreamDestroy(s));
    puts("launch: ok");
    return 0;
}
