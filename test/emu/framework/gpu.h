/* The framework's way to the GPU, chosen with --cuda-api: `runtime` (the emulated libcudart, which
 * takes every driver entry point from cuGetProcAddress, as PyTorch's path does) or `driver` (the
 * linked libcuda.so.1 symbols). Every CUDA call of prophet-emu goes through emu_gpu; the compute
 * "kernels" are emulated CUfunctions (cuModuleLoadData of an emuModuleImage) launched with
 * cuLaunchKernel, and copies are cuMemcpy*Async, so a preload sees them as on a real GPU. Results
 * are CUresult values. */
#ifndef EMU_GPU_H
#define EMU_GPU_H

#include <cuda.h>
#include <stddef.h>

#include "emu_cuda.h"

struct emu_gpu_api {
    const char *name;
    /* the calling thread's current context becomes device dev's primary context */
    CUresult (*set_device)(int dev);
    CUresult (*device_count)(int *n);
    CUresult (*stream_create)(CUstream *s, unsigned flags);
    CUresult (*stream_destroy)(CUstream s);
    CUresult (*stream_sync)(CUstream s);
    CUresult (*ctx_sync)(void); /* cuCtxSynchronize / cudaDeviceSynchronize */
    CUresult (*stream_wait_event)(CUstream s, CUevent e);
    CUresult (*event_create)(CUevent *e, unsigned flags);
    CUresult (*event_record)(CUevent e, CUstream s);
    CUresult (*event_query)(CUevent e);
    CUresult (*event_destroy)(CUevent e);
    CUresult (*mem_alloc)(CUdeviceptr *p, size_t n);
    CUresult (*mem_free)(CUdeviceptr p);
    CUresult (*copy_async)(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s);
    CUresult (*copy_to_host)(void *dst, CUdeviceptr src, size_t n); /* synchronous */
    /* the kernel named `name` of an emulated module image */
    CUresult (*get_kernel)(const struct emuModuleImage *img, const char *name, const void **k);
    CUresult (*launch)(const void *k, void **params, CUstream s);
    const char *(*error_string)(CUresult rc);
};

extern const struct emu_gpu_api emu_gpu_driver;
extern const struct emu_gpu_api emu_gpu_runtime;

/* The API of this process (set once by the rank before any CUDA call). */
extern const struct emu_gpu_api *emu_gpu;

#endif
