/* The two ways of emu_gpu (gpu.h): the driver's linked symbols, and the emulated runtime. */
#include "gpu.h"

#include <stdint.h>

#include "emu_cudart.h"

const struct emu_gpu_api *emu_gpu = &emu_gpu_runtime;

/* ---- driver --------------------------------------------------------------------------------- */

static CUresult drv_set_device(int dev)
{
    CUdevice d;
    CUcontext ctx;
    CUresult rc = cuInit(0);

    if (!rc)
        rc = cuDeviceGet(&d, dev);
    if (!rc)
        rc = cuDevicePrimaryCtxRetain(&ctx, d);
    return rc ? rc : cuCtxSetCurrent(ctx);
}

static CUresult drv_device_count(int *n)
{
    CUresult rc = cuInit(0);

    return rc ? rc : cuDeviceGetCount(n);
}

static CUresult drv_stream_wait_event(CUstream s, CUevent e)
{
    return cuStreamWaitEvent(s, e, 0);
}

static CUresult drv_copy_to_host(void *dst, CUdeviceptr src, size_t n)
{
    return cuMemcpyDtoH(dst, src, n);
}

static CUresult drv_get_kernel(const struct emuModuleImage *img, const char *name, const void **k)
{
    CUmodule m;
    CUfunction f;
    CUresult rc = cuModuleLoadData(&m, img);

    if (!rc)
        rc = cuModuleGetFunction(&f, m, name);
    if (!rc)
        *k = f;
    return rc;
}

static CUresult drv_launch(const void *k, void **params, CUstream s)
{
    return cuLaunchKernel((CUfunction)(uintptr_t)k, 1, 1, 1, 1, 1, 1, 0, s, params, NULL);
}

static const char *drv_error_string(CUresult rc)
{
    const char *s = NULL;

    return cuGetErrorString(rc, &s) == CUDA_SUCCESS && s ? s : "unknown error";
}

static CUresult drv_copy_async(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
    return cuMemcpyDtoDAsync(dst, src, n, s);
}

static CUresult drv_mem_alloc(CUdeviceptr *p, size_t n)
{
    return cuMemAlloc(p, n);
}

static CUresult drv_mem_free(CUdeviceptr p)
{
    return cuMemFree(p);
}

static CUresult drv_stream_destroy(CUstream s)
{
    return cuStreamDestroy(s);
}

static CUresult drv_event_destroy(CUevent e)
{
    return cuEventDestroy(e);
}

const struct emu_gpu_api emu_gpu_driver = {
    .name = "driver",
    .set_device = drv_set_device,
    .device_count = drv_device_count,
    .stream_create = cuStreamCreate,
    .stream_destroy = drv_stream_destroy,
    .stream_sync = cuStreamSynchronize,
    .ctx_sync = cuCtxSynchronize,
    .stream_wait_event = drv_stream_wait_event,
    .event_create = cuEventCreate,
    .event_record = cuEventRecord,
    .event_query = cuEventQuery,
    .event_destroy = drv_event_destroy,
    .mem_alloc = drv_mem_alloc,
    .mem_free = drv_mem_free,
    .copy_async = drv_copy_async,
    .copy_to_host = drv_copy_to_host,
    .get_kernel = drv_get_kernel,
    .launch = drv_launch,
    .error_string = drv_error_string,
};

/* ---- runtime -------------------------------------------------------------------------------- */

static CUresult rt_set_device(int dev)
{
    return (CUresult)cudaSetDevice(dev);
}

static CUresult rt_device_count(int *n)
{
    return (CUresult)cudaGetDeviceCount(n);
}

static CUresult rt_stream_create(CUstream *s, unsigned flags)
{
    return (CUresult)cudaStreamCreateWithFlags(s, flags);
}

static CUresult rt_stream_destroy(CUstream s)
{
    return (CUresult)cudaStreamDestroy(s);
}

static CUresult rt_stream_sync(CUstream s)
{
    return (CUresult)cudaStreamSynchronize(s);
}

static CUresult rt_ctx_sync(void)
{
    return (CUresult)cudaDeviceSynchronize();
}

static CUresult rt_stream_wait_event(CUstream s, CUevent e)
{
    return (CUresult)cudaStreamWaitEvent(s, e, 0);
}

static CUresult rt_event_create(CUevent *e, unsigned flags)
{
    return (CUresult)cudaEventCreateWithFlags(e, flags);
}

static CUresult rt_event_record(CUevent e, CUstream s)
{
    return (CUresult)cudaEventRecord(e, s);
}

static CUresult rt_event_query(CUevent e)
{
    return (CUresult)cudaEventQuery(e);
}

static CUresult rt_event_destroy(CUevent e)
{
    return (CUresult)cudaEventDestroy(e);
}

static CUresult rt_mem_alloc(CUdeviceptr *p, size_t n)
{
    void *v = NULL;
    CUresult rc = (CUresult)cudaMalloc(&v, n);

    *p = (CUdeviceptr)(uintptr_t)v;
    return rc;
}

static CUresult rt_mem_free(CUdeviceptr p)
{
    return (CUresult)cudaFree((void *)(uintptr_t)p);
}

static CUresult rt_copy_async(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
    return (CUresult)cudaMemcpyAsync((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n,
                                     cudaMemcpyDeviceToDevice, s);
}

static CUresult rt_copy_to_host(void *dst, CUdeviceptr src, size_t n)
{
    return (CUresult)cudaMemcpy(dst, (const void *)(uintptr_t)src, n, cudaMemcpyDeviceToHost);
}

static CUresult rt_get_kernel(const struct emuModuleImage *img, const char *name, const void **k)
{
    CUmodule m;
    CUresult rc = (CUresult)cudaEmuLoadModule(img, &m);

    return rc ? rc : (CUresult)cudaEmuGetKernel(m, name, k);
}

static CUresult rt_launch(const void *k, void **params, CUstream s)
{
    return (CUresult)cudaLaunchKernel(k, (dim3){1, 1, 1}, (dim3){1, 1, 1}, params, 0, s);
}

static const char *rt_error_string(CUresult rc)
{
    return cudaGetErrorString((cudaError_t)rc);
}

const struct emu_gpu_api emu_gpu_runtime = {
    .name = "runtime",
    .set_device = rt_set_device,
    .device_count = rt_device_count,
    .stream_create = rt_stream_create,
    .stream_destroy = rt_stream_destroy,
    .stream_sync = rt_stream_sync,
    .ctx_sync = rt_ctx_sync,
    .stream_wait_event = rt_stream_wait_event,
    .event_create = rt_event_create,
    .event_record = rt_event_record,
    .event_query = rt_event_query,
    .event_destroy = rt_event_destroy,
    .mem_alloc = rt_mem_alloc,
    .mem_free = rt_mem_free,
    .copy_async = rt_copy_async,
    .copy_to_host = rt_copy_to_host,
    .get_kernel = rt_get_kernel,
    .launch = rt_launch,
    .error_string = rt_error_string,
};
