/* The driver as the emulated NCCL reaches it: like NCCL's static CUDA runtime, it dlopens
 * libcuda.so.1, dlsyms cuGetProcAddress_v2, asks it for "cuGetProcAddress" and takes every entry
 * point from that pointer (stream-ordered ones with CU_GET_PROC_ADDRESS_LEGACY_STREAM). The
 * collectives run as an emulated kernel (cuModuleLoadData of an emuModuleImage, cuLaunchKernel). */
#ifndef EMU_CUDRV_H
#define EMU_CUDRV_H

#include <cuda.h>

#define EMU_CUDRV_STREAM_FNS(X)                                                                    \
    X(cuEventRecord)                                                                               \
    X(cuStreamWaitEvent)                                                                           \
    X(cuStreamIsCapturing)                                                                         \
    X(cuLaunchKernel)

#define EMU_CUDRV_OTHER_FNS(X)                                                                     \
    X(cuCtxGetDevice)                                                                              \
    X(cuEventCreate)                                                                               \
    X(cuEventDestroy)                                                                              \
    X(cuMemAlloc)                                                                                  \
    X(cuMemFree)                                                                                   \
    X(cuModuleLoadData)                                                                            \
    X(cuModuleGetFunction)

#define EMU_CUDRV_FIELD(name) __typeof__(name) *name;

struct emu_cudrv {
    EMU_CUDRV_STREAM_FNS(EMU_CUDRV_FIELD)
    EMU_CUDRV_OTHER_FNS(EMU_CUDRV_FIELD)
};

/* The table, loaded once; NULL (after one line on stderr) when the driver cannot be reached. */
const struct emu_cudrv *emu_cudrv(void);

/* Launches fn(arg) on stream s as the emulated NCCL kernel (cuLaunchKernel; the kernel's module
 * is loaded at the first launch of the process). */
CUresult emu_cudrv_launch(CUstream s, void (*fn)(void *), void *arg);

#endif
