/* The driver entry points of the emulated runtime, taken from cuGetProcAddress as the real
 * runtime does: dlopen("libcuda.so.1"), dlsym("cuGetProcAddress_v2"), ask it for
 * "cuGetProcAddress", then ask that pointer for every function, per stream flavour. */
#ifndef EMU_CUDART_DRIVER_H
#define EMU_CUDART_DRIVER_H

#include <cuda.h>

/* Stream-ordered functions: one table per flavour (legacy stream, per-thread default stream). */
#define EMU_CUDART_STREAM_FNS(X)                                                                   \
    X(cuEventRecord)                                                                               \
    X(cuEventRecordWithFlags)                                                                      \
    X(cuStreamWaitEvent)                                                                           \
    X(cuStreamSynchronize)                                                                         \
    X(cuStreamQuery)                                                                               \
    X(cuLaunchKernel)                                                                              \
    X(cuLaunchHostFunc)                                                                            \
    X(cuMemcpy)                                                                                    \
    X(cuMemcpyAsync)                                                                               \
    X(cuMemsetD8Async)                                                                             \
    X(cuStreamWaitValue32)                                                                         \
    X(cuStreamWriteValue32)

/* The others, asked with CU_GET_PROC_ADDRESS_DEFAULT. */
#define EMU_CUDART_OTHER_FNS(X)                                                                    \
    X(cuInit)                                                                                      \
    X(cuGetErrorString)                                                                            \
    X(cuDeviceGetCount)                                                                            \
    X(cuDeviceGet)                                                                                 \
    X(cuDevicePrimaryCtxRetain)                                                                    \
    X(cuCtxGetCurrent)                                                                             \
    X(cuCtxSetCurrent)                                                                             \
    X(cuCtxSynchronize)                                                                            \
    X(cuStreamCreate)                                                                              \
    X(cuStreamDestroy)                                                                             \
    X(cuEventCreate)                                                                               \
    X(cuEventQuery)                                                                                \
    X(cuEventSynchronize)                                                                          \
    X(cuEventElapsedTime)                                                                          \
    X(cuEventDestroy)                                                                              \
    X(cuMemAlloc)                                                                                  \
    X(cuMemFree)                                                                                   \
    X(cuMemHostAlloc)                                                                              \
    X(cuMemFreeHost)                                                                               \
    X(cuModuleLoadData)                                                                            \
    X(cuModuleGetFunction)

#define EMU_CUDART_FIELD(name) __typeof__(name) *name;

struct emu_cudart_stream_fns {
    EMU_CUDART_STREAM_FNS(EMU_CUDART_FIELD)
};

struct emu_cudart_fns {
    EMU_CUDART_OTHER_FNS(EMU_CUDART_FIELD)
};

enum { EMU_CUDART_LEGACY = 0, EMU_CUDART_PER_THREAD = 1 };

extern struct emu_cudart_fns emu_cudart_drv;
extern struct emu_cudart_stream_fns emu_cudart_sdrv[2];

/* Loads the tables once; then cuInit(0) and makes the thread's device's primary context current
 * when the thread has none. Returns the first error. */
CUresult emu_cudart_enter(void);

/* The device that the calling thread's next context is made for (cudaSetDevice). */
void emu_cudart_set_thread_device(int dev);

#endif
