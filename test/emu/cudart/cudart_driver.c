/* Loading the driver the real runtime's way (see cudart_driver.h) and the per-thread context. */
#include "cudart_driver.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

struct emu_cudart_fns emu_cudart_drv;
struct emu_cudart_stream_fns emu_cudart_sdrv[2];

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static CUresult load_rc = CUDA_ERROR_NOT_INITIALIZED;
static __thread int thread_device;

typedef CUresult (*emu_gpa_fn)(const char *, void **, int, cuuint64_t,
                               CUdriverProcAddressQueryResult *);

static CUresult ask(emu_gpa_fn gpa, const char *name, void **slot, cuuint64_t flags)
{
    CUdriverProcAddressQueryResult q = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CUresult rc = gpa(name, slot, CUDA_VERSION, flags, &q);

    if (rc == CUDA_SUCCESS && q != CU_GET_PROC_ADDRESS_SUCCESS)
        rc = CUDA_ERROR_NOT_FOUND;
    if (rc != CUDA_SUCCESS)
        fprintf(stderr, "emu-cudart: cuGetProcAddress(%s, flags %llu) failed: %d\n", name,
                (unsigned long long)flags, (int)rc);
    return rc;
}

static CUresult load_tables(emu_gpa_fn gpa)
{
    CUresult rc = CUDA_SUCCESS;

#define EMU_ASK_OTHER(name)                                                                        \
    if (!rc)                                                                                       \
        rc = ask(gpa, #name, (void **)&emu_cudart_drv.name, CU_GET_PROC_ADDRESS_DEFAULT);
#define EMU_ASK_STREAM(name)                                                                       \
    if (!rc)                                                                                       \
        rc = ask(gpa, #name, (void **)&emu_cudart_sdrv[EMU_CUDART_LEGACY].name,                    \
                 CU_GET_PROC_ADDRESS_LEGACY_STREAM);                                               \
    if (!rc)                                                                                       \
        rc = ask(gpa, #name, (void **)&emu_cudart_sdrv[EMU_CUDART_PER_THREAD].name,                \
                 CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    EMU_CUDART_OTHER_FNS(EMU_ASK_OTHER)
    EMU_CUDART_STREAM_FNS(EMU_ASK_STREAM)
#undef EMU_ASK_OTHER
#undef EMU_ASK_STREAM
    return rc;
}

static void load(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    emu_gpa_fn first, gpa = NULL;

    if (!h) {
        fprintf(stderr, "emu-cudart: dlopen libcuda.so.1: %s\n", dlerror());
        load_rc = CUDA_ERROR_NOT_FOUND;
        return;
    }
    *(void **)&first = dlsym(h, "cuGetProcAddress_v2");
    if (!first) {
        fprintf(stderr, "emu-cudart: no cuGetProcAddress_v2 in libcuda.so.1\n");
        load_rc = CUDA_ERROR_NOT_FOUND;
        return;
    }
    /* from now on only the driver's own answer for "cuGetProcAddress" is used */
    load_rc = ask(first, "cuGetProcAddress", (void **)&gpa, CU_GET_PROC_ADDRESS_DEFAULT);
    if (!load_rc)
        load_rc = load_tables(gpa);
    if (!load_rc)
        load_rc = emu_cudart_drv.cuInit(0);
}

void emu_cudart_set_thread_device(int dev)
{
    thread_device = dev;
}

CUresult emu_cudart_enter(void)
{
    CUcontext ctx = NULL;
    CUdevice dev;
    CUresult rc;

    pthread_once(&load_once, load);
    if (load_rc)
        return load_rc;
    rc = emu_cudart_drv.cuCtxGetCurrent(&ctx);
    if (rc || ctx)
        return rc;
    rc = emu_cudart_drv.cuDeviceGet(&dev, thread_device);
    if (!rc)
        rc = emu_cudart_drv.cuDevicePrimaryCtxRetain(&ctx, dev);
    if (!rc)
        rc = emu_cudart_drv.cuCtxSetCurrent(ctx);
    return rc;
}
