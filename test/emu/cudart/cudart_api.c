/* The cudart-like API (emu_cudart.h) over the driver tables of cudart_driver.c. Stream-ordered
 * functions exist in two forms: the plain one uses the legacy-stream entry points, the _ptsz one
 * the per-thread-default-stream entry points. */
#include <stdint.h>

#include "cudart_driver.h"
#include "emu_cudart.h"

#define ENTER()                                                                                    \
    do {                                                                                           \
        CUresult e_ = emu_cudart_enter();                                                          \
        if (e_)                                                                                    \
            return (cudaError_t)e_;                                                                \
    } while (0)

#define D emu_cudart_drv

static inline CUdeviceptr dptr(const void *p)
{
    return (CUdeviceptr)(uintptr_t)p;
}

cudaError_t cudaGetDeviceCount(int *count)
{
    ENTER();
    return (cudaError_t)D.cuDeviceGetCount(count);
}

cudaError_t cudaSetDevice(int device)
{
    CUdevice dev;
    CUcontext ctx;
    CUresult rc;

    emu_cudart_set_thread_device(device);
    ENTER();
    rc = D.cuDeviceGet(&dev, device);
    if (!rc)
        rc = D.cuDevicePrimaryCtxRetain(&ctx, dev);
    if (!rc)
        rc = D.cuCtxSetCurrent(ctx);
    return (cudaError_t)rc;
}

cudaError_t cudaDeviceSynchronize(void)
{
    ENTER();
    return (cudaError_t)D.cuCtxSynchronize();
}

const char *cudaGetErrorString(cudaError_t error)
{
    const char *s = NULL;

    if (emu_cudart_enter() || D.cuGetErrorString((CUresult)error, &s) || !s)
        return "unknown error";
    return s;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int flags)
{
    ENTER();
    return (cudaError_t)D.cuStreamCreate(s, flags);
}

cudaError_t cudaStreamDestroy(cudaStream_t s)
{
    ENTER();
    return (cudaError_t)D.cuStreamDestroy(s);
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned int flags)
{
    ENTER();
    return (cudaError_t)D.cuEventCreate(e, flags);
}

cudaError_t cudaEventQuery(cudaEvent_t e)
{
    ENTER();
    return (cudaError_t)D.cuEventQuery(e);
}

cudaError_t cudaEventSynchronize(cudaEvent_t e)
{
    ENTER();
    return (cudaError_t)D.cuEventSynchronize(e);
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
    ENTER();
    return (cudaError_t)D.cuEventElapsedTime(ms, start, end);
}

cudaError_t cudaEventDestroy(cudaEvent_t e)
{
    ENTER();
    return (cudaError_t)D.cuEventDestroy(e);
}

cudaError_t cudaMalloc(void **p, size_t size)
{
    CUdeviceptr d = 0;
    CUresult rc;

    ENTER();
    rc = D.cuMemAlloc(&d, size);
    if (!rc)
        *p = (void *)(uintptr_t)d;
    return (cudaError_t)rc;
}

cudaError_t cudaFree(void *p)
{
    ENTER();
    return p ? (cudaError_t)D.cuMemFree(dptr(p)) : cudaSuccess;
}

cudaError_t cudaHostAlloc(void **p, size_t size, unsigned int flags)
{
    ENTER();
    return (cudaError_t)D.cuMemHostAlloc(p, size, flags);
}

cudaError_t cudaFreeHost(void *p)
{
    ENTER();
    return (cudaError_t)D.cuMemFreeHost(p);
}

cudaError_t cudaEmuLoadModule(const struct emuModuleImage *image, CUmodule *module)
{
    ENTER();
    return (cudaError_t)D.cuModuleLoadData(module, image);
}

cudaError_t cudaEmuGetKernel(CUmodule module, const char *name, const void **func)
{
    CUfunction f = NULL;
    CUresult rc;

    ENTER();
    rc = D.cuModuleGetFunction(&f, module, name);
    if (!rc)
        *func = f;
    return (cudaError_t)rc;
}

/* ---- stream-ordered, in both flavours ------------------------------------------------------ */

static cudaError_t event_record(int fl, cudaEvent_t e, cudaStream_t s)
{
    ENTER();
    return (cudaError_t)emu_cudart_sdrv[fl].cuEventRecord(e, s);
}

static cudaError_t stream_wait_event(int fl, cudaStream_t s, cudaEvent_t e, unsigned int flags)
{
    ENTER();
    return (cudaError_t)emu_cudart_sdrv[fl].cuStreamWaitEvent(s, e, flags);
}

static cudaError_t stream_sync(int fl, cudaStream_t s)
{
    ENTER();
    return (cudaError_t)emu_cudart_sdrv[fl].cuStreamSynchronize(s);
}

static cudaError_t stream_query(int fl, cudaStream_t s)
{
    ENTER();
    return (cudaError_t)emu_cudart_sdrv[fl].cuStreamQuery(s);
}

/* Every kind is one linear copy here (device memory is host memory in the emulator). */
static cudaError_t memcpy_async(int fl, void *dst, const void *src, size_t n,
                                enum cudaMemcpyKind kind, cudaStream_t s)
{
    (void)kind;
    ENTER();
    return (cudaError_t)emu_cudart_sdrv[fl].cuMemcpyAsync(dptr(dst), dptr(src), n, s);
}

static cudaError_t memset_async(int fl, void *p, int value, size_t n, cudaStream_t s)
{
    ENTER();
    return (cudaError_t)emu_cudart_sdrv[fl].cuMemsetD8Async(dptr(p), (unsigned char)value, n, s);
}

static cudaError_t host_func(int fl, cudaStream_t s, cudaHostFn_t fn, void *userData)
{
    ENTER();
    return (cudaError_t)emu_cudart_sdrv[fl].cuLaunchHostFunc(s, fn, userData);
}

static cudaError_t launch_kernel(int fl, const void *func, dim3 grid, dim3 block, void **args,
                                 size_t sharedMem, cudaStream_t s)
{
    ENTER();
    return (cudaError_t)emu_cudart_sdrv[fl].cuLaunchKernel(
        (CUfunction)(uintptr_t)func, grid.x, grid.y, grid.z, block.x, block.y, block.z,
        (unsigned int)sharedMem, s, args, NULL);
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind)
{
    (void)kind;
    ENTER();
    return (cudaError_t)emu_cudart_sdrv[EMU_CUDART_LEGACY].cuMemcpy(dptr(dst), dptr(src), n);
}

#define L EMU_CUDART_LEGACY
#define T EMU_CUDART_PER_THREAD

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
    return event_record(L, e, s);
}
cudaError_t cudaEventRecord_ptsz(cudaEvent_t e, cudaStream_t s)
{
    return event_record(T, e, s);
}
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int flags)
{
    return stream_wait_event(L, s, e, flags);
}
cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t s, cudaEvent_t e, unsigned int flags)
{
    return stream_wait_event(T, s, e, flags);
}
cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
    return stream_sync(L, s);
}
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t s)
{
    return stream_sync(T, s);
}
cudaError_t cudaStreamQuery(cudaStream_t s)
{
    return stream_query(L, s);
}
cudaError_t cudaStreamQuery_ptsz(cudaStream_t s)
{
    return stream_query(T, s);
}
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
                            cudaStream_t s)
{
    return memcpy_async(L, dst, src, n, kind, s);
}
cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
                                 cudaStream_t s)
{
    return memcpy_async(T, dst, src, n, kind, s);
}
cudaError_t cudaMemsetAsync(void *p, int value, size_t n, cudaStream_t s)
{
    return memset_async(L, p, value, n, s);
}
cudaError_t cudaMemsetAsync_ptsz(void *p, int value, size_t n, cudaStream_t s)
{
    return memset_async(T, p, value, n, s);
}
cudaError_t cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void *userData)
{
    return host_func(L, s, fn, userData);
}
cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t s, cudaHostFn_t fn, void *userData)
{
    return host_func(T, s, fn, userData);
}
cudaError_t cudaLaunchKernel(const void *func, dim3 grid, dim3 block, void **args, size_t sharedMem,
                             cudaStream_t s)
{
    return launch_kernel(L, func, grid, block, args, sharedMem, s);
}
cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 grid, dim3 block, void **args,
                                  size_t sharedMem, cudaStream_t s)
{
    return launch_kernel(T, func, grid, block, args, sharedMem, s);
}
