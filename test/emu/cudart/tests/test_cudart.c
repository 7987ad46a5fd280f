/* The emulated runtime takes every driver entry point from cuGetProcAddress: libcudart.so.13 does
 * not link libcuda (argv[1]), the driver counted one self-query of "cuGetProcAddress" and one
 * lookup per function and stream flavour, and the API works through those pointers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_cudart.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);               \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)
#define OK(call) CHECK((call) == cudaSuccess)

static void scale_kernel(void **params)
{
    float *d = *(float **)params[0];
    size_t n = *(size_t *)params[1];
    float f = *(float *)params[2];

    for (size_t i = 0; i < n; i++)
        d[i] *= f;
}

static const struct emuKernelDef defs[] = {
    {.name = "scale",
     .fn = scale_kernel,
     .nparams = 3,
     .param_size = {sizeof(float *), sizeof(size_t), sizeof(float)}},
};
static const struct emuModuleImage image = {
    .magic = EMU_MODULE_MAGIC, .nkernels = 1, .kernels = defs};

/* The dynamic section of the runtime double names no libcuda. */
static void check_not_linked(const char *lib)
{
    char cmd[4200], line[512];
    int needed = 0;

    snprintf(cmd, sizeof(cmd), "readelf -d '%s'", lib);
    FILE *p = popen(cmd, "r");
    CHECK(p);
    while (fgets(line, sizeof(line), p)) {
        if (strstr(line, "(NEEDED)"))
            needed++;
        CHECK(!strstr(line, "libcuda.so"));
    }
    CHECK(pclose(p) == 0 && needed > 0);
}

int main(int argc, char **argv)
{
    CUmodule mod;
    const void *k;
    cudaStream_t a, b;
    cudaEvent_t e;
    float *d, *h;
    size_t n = 64;
    float f = 0.5f;

    CHECK(argc == 2);
    check_not_linked(argv[1]);
    CHECK(emuProcLookups("cuGetProcAddress", 0) == 0);
    OK(cudaSetDevice(0));
    OK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
    OK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
    OK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    OK(cudaMalloc((void **)&d, n * sizeof(float)));
    OK(cudaHostAlloc((void **)&h, n * sizeof(float), cudaHostAllocDefault));
    for (size_t i = 0; i < n; i++)
        h[i] = (float)i;
    OK(cudaEmuLoadModule(&image, &mod));
    OK(cudaEmuGetKernel(mod, "scale", &k));

    /* a: copy in, record; b: wait, scale (kernel), copy out */
    OK(cudaMemcpyAsync(d, h, n * sizeof(float), cudaMemcpyHostToDevice, a));
    OK(cudaEventRecord(e, a));
    OK(cudaStreamWaitEvent(b, e, 0));
    void *args[] = {&d, &n, &f};
    OK(cudaLaunchKernel(k, (dim3){1, 1, 1}, (dim3){32, 1, 1}, args, 0, b));
    OK(cudaLaunchKernel_ptsz(k, (dim3){1, 1, 1}, (dim3){32, 1, 1}, args, 0, b));
    OK(cudaMemsetAsync(h, 0, n * sizeof(float), b));
    OK(cudaMemcpyAsync_ptsz(h, d, n * sizeof(float), cudaMemcpyDeviceToHost, b));
    OK(cudaEventRecord_ptsz(e, b));
    OK(cudaStreamSynchronize(b));
    CHECK(cudaEventQuery(e) == cudaSuccess && cudaStreamQuery_ptsz(b) == cudaSuccess);
    for (size_t i = 0; i < n; i++)
        CHECK(h[i] == (float)i * 0.25f);

    /* the runtime's way to the driver */
    CHECK(emuProcLookups("cuGetProcAddress", 0) == 1);
    const char *stream_fns[] = {"cuEventRecord",       "cuStreamWaitEvent", "cuStreamSynchronize",
                                "cuStreamQuery",       "cuLaunchKernel",    "cuLaunchHostFunc",
                                "cuMemcpyAsync",       "cuMemsetD8Async",   "cuStreamWaitValue32",
                                "cuStreamWriteValue32"};
    for (size_t i = 0; i < sizeof(stream_fns) / sizeof(stream_fns[0]); i++) {
        CHECK(emuProcLookups(stream_fns[i], 1) == 1);
        CHECK(emuProcLookups(stream_fns[i], 2) == 1);
        CHECK(emuProcLookups(stream_fns[i], 0) == 0);
    }
    const char *other_fns[] = {"cuInit",           "cuStreamCreate",     "cuEventCreate",
                               "cuEventQuery",     "cuMemAlloc",         "cuMemHostAlloc",
                               "cuModuleLoadData", "cuModuleGetFunction"};
    for (size_t i = 0; i < sizeof(other_fns) / sizeof(other_fns[0]); i++)
        CHECK(emuProcLookups(other_fns[i], 0) == 1);

    OK(cudaEventDestroy(e));
    OK(cudaStreamDestroy(a));
    OK(cudaStreamDestroy(b));
    OK(cudaFree(d));
    OK(cudaFreeHost(h));
    puts("cudart: ok");
    return 0;
}
