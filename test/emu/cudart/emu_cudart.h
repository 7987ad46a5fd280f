/* The emulated CUDA runtime (build/lib/emu/libcudart.so.13): a small cudart-like API for the
 * framework emulator. Like the real runtime it reaches the driver only through cuGetProcAddress
 * (see README.md). Not the real cuda_runtime_api.h: a subset with the same names and argument
 * lists where they exist, and two emulator functions (cudaEmu*) that stand in for the kernel
 * registration that nvcc generates. Errors are the driver's CUresult values (cudaSuccess = 0,
 * cudaErrorNotReady = 600 as in the real runtime). */
#ifndef EMU_CUDART_H
#define EMU_CUDART_H

#include <cuda.h>
#include <stddef.h>

#include "emu_cuda.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef int cudaError_t;
typedef CUstream cudaStream_t;
typedef CUevent cudaEvent_t;
typedef void (*cudaHostFn_t)(void *userData);

typedef struct {
    unsigned int x, y, z;
} dim3;

enum cudaMemcpyKind {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
    cudaMemcpyDefault = 4,
};

#define cudaSuccess 0
#define cudaErrorNotReady 600
#define cudaStreamDefault 0x00
#define cudaStreamNonBlocking 0x01
#define cudaEventDefault 0x00
#define cudaEventDisableTiming 0x02
#define cudaHostAllocDefault 0x00
#define cudaStreamLegacy ((cudaStream_t)0x1)
#define cudaStreamPerThread ((cudaStream_t)0x2)

/* Device and context: the calling thread's current device's primary context, made current on
 * the first call that needs one (as the real runtime does). */
cudaError_t cudaGetDeviceCount(int *count);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaDeviceSynchronize(void);
const char *cudaGetErrorString(cudaError_t error);

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int flags);
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaStreamQuery(cudaStream_t s);
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int flags);

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned int flags);
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s);
cudaError_t cudaEventQuery(cudaEvent_t e);
cudaError_t cudaEventSynchronize(cudaEvent_t e);
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end);
cudaError_t cudaEventDestroy(cudaEvent_t e);

cudaError_t cudaMalloc(void **p, size_t size);
cudaError_t cudaFree(void *p);
cudaError_t cudaHostAlloc(void **p, size_t size, unsigned int flags);
cudaError_t cudaFreeHost(void *p);
cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
                            cudaStream_t s);
cudaError_t cudaMemsetAsync(void *p, int value, size_t n, cudaStream_t s);
cudaError_t cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void *userData);

/* func is a kernel handle from cudaEmuGetKernel (a CUfunction, as a cudaKernel_t is accepted by
 * the real cudaLaunchKernel); launched with cuLaunchKernel. */
cudaError_t cudaLaunchKernel(const void *func, dim3 grid, dim3 block, void **args, size_t sharedMem,
                             cudaStream_t s);

/* Per-thread default stream forms (what nvcc --default-stream per-thread calls): the driver entry
 * points asked with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM. */
cudaError_t cudaEventRecord_ptsz(cudaEvent_t e, cudaStream_t s);
cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t s, cudaEvent_t e, unsigned int flags);
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t s);
cudaError_t cudaStreamQuery_ptsz(cudaStream_t s);
cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
                                 cudaStream_t s);
cudaError_t cudaMemsetAsync_ptsz(void *p, int value, size_t n, cudaStream_t s);
cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t s, cudaHostFn_t fn, void *userData);
cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 grid, dim3 block, void **args,
                                  size_t sharedMem, cudaStream_t s);

/* Emulator: load an emulated module (emu_cuda.h) with cuModuleLoadData, and look a kernel up by
 * name with cuModuleGetFunction; the handle goes to cudaLaunchKernel. */
cudaError_t cudaEmuLoadModule(const struct emuModuleImage *image, CUmodule *module);
cudaError_t cudaEmuGetKernel(CUmodule module, const char *name, const void **func);

#ifdef __cplusplus
}
#endif
#endif
