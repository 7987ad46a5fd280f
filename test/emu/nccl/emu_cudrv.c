/* The emulated NCCL's way to the driver: see emu_cudrv.h. */
#include "emu_cudrv.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "emu_cuda.h"

typedef CUresult (*emu_gpa_fn)(const char *, void **, int, cuuint64_t,
                               CUdriverProcAddressQueryResult *);

static struct emu_cudrv table;
static int (*fault_hit)(const char *, int *); /* the emulated driver's emuFaultHit (EMU_FAULT) */
static const struct emu_cudrv *table_ok;
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static int ask(emu_gpa_fn gpa, const char *name, void **slot, cuuint64_t flags)
{
    CUdriverProcAddressQueryResult q = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;

    if (gpa(name, slot, CUDA_VERSION, flags, &q) == CUDA_SUCCESS &&
        q == CU_GET_PROC_ADDRESS_SUCCESS && *slot)
        return 0;
    fprintf(stderr, "emu-nccl: cuGetProcAddress(%s) failed\n", name);
    return -1;
}

static void load(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    emu_gpa_fn first = NULL, gpa = NULL;
    int err = 0;

    if (h) {
        *(void **)&first = dlsym(h, "cuGetProcAddress_v2");
        *(void **)&fault_hit = dlsym(h, "emuFaultHit");
    }
    if (!first || ask(first, "cuGetProcAddress", (void **)&gpa, CU_GET_PROC_ADDRESS_DEFAULT)) {
        fprintf(stderr, "emu-nccl: cannot reach the driver through libcuda.so.1\n");
        return;
    }
#define EMU_ASK_STREAM(name)                                                                       \
    err = err || ask(gpa, #name, (void **)&table.name, CU_GET_PROC_ADDRESS_LEGACY_STREAM);
#define EMU_ASK_OTHER(name)                                                                        \
    err = err || ask(gpa, #name, (void **)&table.name, CU_GET_PROC_ADDRESS_DEFAULT);
    EMU_CUDRV_STREAM_FNS(EMU_ASK_STREAM)
    EMU_CUDRV_OTHER_FNS(EMU_ASK_OTHER)
#undef EMU_ASK_STREAM
#undef EMU_ASK_OTHER
    if (!err)
        table_ok = &table;
}

const struct emu_cudrv *emu_cudrv(void)
{
    pthread_once(&table_once, load);
    return table_ok;
}

int emu_nccl_fault_hit(const char *name, int *code)
{
    pthread_once(&table_once, load);
    return fault_hit ? fault_hit(name, code) : 0;
}

/* ---- the kernel --------------------------------------------------------------------------- */

static void nccl_kernel(void **params)
{
    void (*fn)(void *) = *(void (**)(void *))params[0];

    fn(*(void **)params[1]);
}

static const struct emuKernelDef kernels[] = {
    {.name = "ncclDevKernel_Generic",
     .fn = nccl_kernel,
     .nparams = 2,
     .param_size = {sizeof(void (*)(void *)), sizeof(void *)}},
};
static const struct emuModuleImage image = {
    .magic = EMU_MODULE_MAGIC, .nkernels = 1, .kernels = kernels};

static CUfunction kernel;
static CUresult kernel_rc = CUDA_ERROR_NOT_INITIALIZED;
static pthread_once_t kernel_once = PTHREAD_ONCE_INIT;

static void load_kernel(void)
{
    const struct emu_cudrv *d = emu_cudrv();
    CUmodule m;

    if (!d)
        return;
    kernel_rc = d->cuModuleLoadData(&m, &image);
    if (!kernel_rc)
        kernel_rc = d->cuModuleGetFunction(&kernel, m, "ncclDevKernel_Generic");
}

CUresult emu_cudrv_launch(CUstream s, void (*fn)(void *), void *arg)
{
    void *params[] = {&fn, &arg};

    pthread_once(&kernel_once, load_kernel);
    if (kernel_rc)
        return kernel_rc;
    return table.cuLaunchKernel(kernel, 1, 1, 1, 1, 1, 1, 0, s, params, NULL);
}
