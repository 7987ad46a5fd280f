/* The per-thread default stream variants (_ptsz: stream-ordered calls, _ptds: synchronous copies
 * and memsets) that cuGetProcAddress hands out for CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
 * and that a program compiled with CUDA_API_PER_THREAD_DEFAULT_STREAM links. In a _ptsz call a
 * NULL stream is CU_STREAM_PER_THREAD; here the per-thread default stream is the legacy one (see
 * README "Limits"), so the variants behave like the plain functions. */
#include "emu_internal.h"

#define EMU_PTSZ(name, base, params, args, stream)                                                 \
    CUresult name params;                                                                          \
    CUresult name params                                                                           \
    {                                                                                              \
        if (!(stream))                                                                             \
            (stream) = CU_STREAM_PER_THREAD;                                                       \
        return base args;                                                                          \
    }

#define EMU_PTDS(name, base, params, args)                                                         \
    CUresult name params;                                                                          \
    CUresult name params                                                                           \
    {                                                                                              \
        return base args;                                                                          \
    }

EMU_PTSZ(cuEventRecord_ptsz, cuEventRecord, (CUevent e, CUstream s), (e, s), s)
EMU_PTSZ(cuEventRecordWithFlags_ptsz, cuEventRecordWithFlags,
         (CUevent e, CUstream s, unsigned int f), (e, s, f), s)
EMU_PTSZ(cuStreamWaitEvent_ptsz, cuStreamWaitEvent, (CUstream s, CUevent e, unsigned int f),
         (s, e, f), s)
EMU_PTSZ(cuStreamSynchronize_ptsz, cuStreamSynchronize, (CUstream s), (s), s)
EMU_PTSZ(cuStreamQuery_ptsz, cuStreamQuery, (CUstream s), (s), s)
EMU_PTSZ(cuStreamGetFlags_ptsz, cuStreamGetFlags, (CUstream s, unsigned int *f), (s, f), s)
EMU_PTSZ(cuStreamGetPriority_ptsz, cuStreamGetPriority, (CUstream s, int *p), (s, p), s)
EMU_PTSZ(cuStreamGetCtx_ptsz, cuStreamGetCtx, (CUstream s, CUcontext *c), (s, c), s)
EMU_PTSZ(cuStreamGetId_ptsz, cuStreamGetId, (CUstream s, unsigned long long *id), (s, id), s)
EMU_PTSZ(cuStreamIsCapturing_ptsz, cuStreamIsCapturing, (CUstream s, CUstreamCaptureStatus *st),
         (s, st), s)
EMU_PTSZ(cuStreamBeginCapture_v2_ptsz, cuStreamBeginCapture_v2, (CUstream s, CUstreamCaptureMode m),
         (s, m), s)
EMU_PTSZ(cuStreamEndCapture_ptsz, cuStreamEndCapture, (CUstream s, CUgraph *g), (s, g), s)
EMU_PTSZ(cuStreamAddCallback_ptsz, cuStreamAddCallback,
         (CUstream s, CUstreamCallback cb, void *u, unsigned int f), (s, cb, u, f), s)
EMU_PTSZ(cuLaunchHostFunc_ptsz, cuLaunchHostFunc, (CUstream s, CUhostFn fn, void *u), (s, fn, u), s)
EMU_PTSZ(cuLaunchKernel_ptsz, cuLaunchKernel,
         (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
          unsigned int by, unsigned int bz, unsigned int shm, CUstream s, void **p, void **x),
         (f, gx, gy, gz, bx, by, bz, shm, s, p, x), s)
EMU_PTSZ(cuMemcpyAsync_ptsz, cuMemcpyAsync, (CUdeviceptr d, CUdeviceptr e, size_t n, CUstream s),
         (d, e, n, s), s)
EMU_PTSZ(cuMemcpyHtoDAsync_v2_ptsz, cuMemcpyHtoDAsync_v2,
         (CUdeviceptr d, const void *h, size_t n, CUstream s), (d, h, n, s), s)
EMU_PTSZ(cuMemcpyDtoHAsync_v2_ptsz, cuMemcpyDtoHAsync_v2,
         (void *h, CUdeviceptr d, size_t n, CUstream s), (h, d, n, s), s)
EMU_PTSZ(cuMemcpyDtoDAsync_v2_ptsz, cuMemcpyDtoDAsync_v2,
         (CUdeviceptr d, CUdeviceptr e, size_t n, CUstream s), (d, e, n, s), s)
EMU_PTSZ(cuMemsetD8Async_ptsz, cuMemsetD8Async,
         (CUdeviceptr d, unsigned char v, size_t n, CUstream s), (d, v, n, s), s)
EMU_PTSZ(cuMemsetD32Async_ptsz, cuMemsetD32Async,
         (CUdeviceptr d, unsigned int v, size_t n, CUstream s), (d, v, n, s), s)
EMU_PTSZ(cuStreamWaitValue32_v2_ptsz, cuStreamWaitValue32_v2,
         (CUstream s, CUdeviceptr a, cuuint32_t v, unsigned int f), (s, a, v, f), s)
EMU_PTSZ(cuStreamWriteValue32_v2_ptsz, cuStreamWriteValue32_v2,
         (CUstream s, CUdeviceptr a, cuuint32_t v, unsigned int f), (s, a, v, f), s)
EMU_PTSZ(cuStreamGetCaptureInfo_v3_ptsz, cuStreamGetCaptureInfo_v3,
         (CUstream s, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *g,
          const CUgraphNode **deps, const CUgraphEdgeData **edges, size_t *n),
         (s, st, id, g, deps, edges, n), s)

EMU_PTDS(cuMemcpy_ptds, cuMemcpy, (CUdeviceptr d, CUdeviceptr e, size_t n), (d, e, n))
EMU_PTDS(cuMemcpyHtoD_v2_ptds, cuMemcpyHtoD_v2, (CUdeviceptr d, const void *h, size_t n), (d, h, n))
EMU_PTDS(cuMemcpyDtoH_v2_ptds, cuMemcpyDtoH_v2, (void *h, CUdeviceptr d, size_t n), (h, d, n))
EMU_PTDS(cuMemcpyDtoD_v2_ptds, cuMemcpyDtoD_v2, (CUdeviceptr d, CUdeviceptr e, size_t n), (d, e, n))
EMU_PTDS(cuMemsetD8_v2_ptds, cuMemsetD8_v2, (CUdeviceptr d, unsigned char v, size_t n), (d, v, n))
EMU_PTDS(cuMemsetD32_v2_ptds, cuMemsetD32_v2, (CUdeviceptr d, unsigned int v, size_t n), (d, v, n))
