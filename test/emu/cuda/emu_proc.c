/* cuGetProcAddress, and the unversioned ("plain") exports of names that cuda.h maps to versioned
 * ones. A plain name whose legacy signature is the versioned one's (cuMemAlloc, cuStreamDestroy,
 * ...) forwards to it. Four legacy signatures differ in their arguments; their plain exports keep
 * the real driver's legacy signature: cuCtxCreate(pctx, flags, dev), cuStreamBeginCapture(stream),
 * cuStreamGetCaptureInfo(stream, status, id), cuGetProcAddress(symbol, pfn, version, flags). */
#include <string.h>

#include "emu_internal.h"

/* Not declared by the CUDA 13.0 header any more; the CUDA 12 signature. */
CUresult cuStreamGetCaptureInfo_v2(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
                                   cuuint64_t *id_out, CUgraph *graph_out,
                                   const CUgraphNode **dependencies_out,
                                   size_t *numDependencies_out);
CUresult cuStreamGetCaptureInfo_v2(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
                                   cuuint64_t *id_out, CUgraph *graph_out,
                                   const CUgraphNode **dependencies_out,
                                   size_t *numDependencies_out)
{
    return cuStreamGetCaptureInfo_v3(hStream, captureStatus_out, id_out, graph_out,
                                     dependencies_out, NULL, numDependencies_out);
}

/* ---- legacy plain names with their own signatures -------------------------------------------- */
#undef cuCtxCreate
#undef cuStreamBeginCapture
#undef cuStreamGetCaptureInfo
#undef cuGetProcAddress

CUresult cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev);
CUresult cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    return cuCtxCreate_v4(pctx, NULL, flags, dev);
}

CUresult cuStreamBeginCapture(CUstream hStream);
CUresult cuStreamBeginCapture(CUstream hStream)
{
    return cuStreamBeginCapture_v2(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL);
}

CUresult cuStreamGetCaptureInfo(CUstream hStream, CUstreamCaptureStatus *captureStatus,
                                cuuint64_t *id);
CUresult cuStreamGetCaptureInfo(CUstream hStream, CUstreamCaptureStatus *captureStatus,
                                cuuint64_t *id)
{
    return cuStreamGetCaptureInfo_v3(hStream, captureStatus, id, NULL, NULL, NULL, NULL);
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);
CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    return cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, NULL);
}

/* ---- plain names that forward to the versioned function -------------------------------------- */
#define EMU_FORWARD(plain, versioned, params, args)                                                \
    CUresult plain params;                                                                         \
    CUresult plain params                                                                          \
    {                                                                                              \
        return versioned args;                                                                     \
    }

#undef cuDevicePrimaryCtxRelease
#undef cuDevicePrimaryCtxSetFlags
#undef cuCtxDestroy
#undef cuCtxPushCurrent
#undef cuCtxPopCurrent
#undef cuStreamDestroy
#undef cuEventDestroy
#undef cuEventElapsedTime
#undef cuMemAlloc
#undef cuMemFree
#undef cuMemAllocHost
#undef cuMemHostRegister
#undef cuMemHostGetDevicePointer
#undef cuMemGetInfo
#undef cuMemGetAddressRange
#undef cuMemcpyHtoDAsync
#undef cuMemcpyDtoHAsync
#undef cuMemcpyDtoDAsync
#undef cuMemcpyHtoD
#undef cuMemcpyDtoH
#undef cuMemcpyDtoD
#undef cuMemsetD8
#undef cuMemsetD32
#undef cuStreamWaitValue32
#undef cuStreamWriteValue32
#undef cuDeviceTotalMem
#undef cuDeviceGetUuid

EMU_FORWARD(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2, (CUdevice dev), (dev))
EMU_FORWARD(cuDevicePrimaryCtxSetFlags, cuDevicePrimaryCtxSetFlags_v2,
            (CUdevice dev, unsigned int flags), (dev, flags))
EMU_FORWARD(cuCtxDestroy, cuCtxDestroy_v2, (CUcontext ctx), (ctx))
EMU_FORWARD(cuCtxPushCurrent, cuCtxPushCurrent_v2, (CUcontext ctx), (ctx))
EMU_FORWARD(cuCtxPopCurrent, cuCtxPopCurrent_v2, (CUcontext * pctx), (pctx))
EMU_FORWARD(cuStreamDestroy, cuStreamDestroy_v2, (CUstream s), (s))
EMU_FORWARD(cuEventDestroy, cuEventDestroy_v2, (CUevent e), (e))
EMU_FORWARD(cuEventElapsedTime, cuEventElapsedTime_v2, (float *ms, CUevent a, CUevent b),
            (ms, a, b))
EMU_FORWARD(cuMemAlloc, cuMemAlloc_v2, (CUdeviceptr * dptr, size_t n), (dptr, n))
EMU_FORWARD(cuMemFree, cuMemFree_v2, (CUdeviceptr dptr), (dptr))
EMU_FORWARD(cuMemAllocHost, cuMemAllocHost_v2, (void **pp, size_t n), (pp, n))
EMU_FORWARD(cuMemHostRegister, cuMemHostRegister_v2, (void *p, size_t n, unsigned int f), (p, n, f))
EMU_FORWARD(cuMemHostGetDevicePointer, cuMemHostGetDevicePointer_v2,
            (CUdeviceptr * d, void *p, unsigned int f), (d, p, f))
EMU_FORWARD(cuMemGetInfo, cuMemGetInfo_v2, (size_t * free_bytes, size_t *total),
            (free_bytes, total))
EMU_FORWARD(cuMemGetAddressRange, cuMemGetAddressRange_v2,
            (CUdeviceptr * b, size_t *n, CUdeviceptr d), (b, n, d))
EMU_FORWARD(cuMemcpyHtoDAsync, cuMemcpyHtoDAsync_v2,
            (CUdeviceptr d, const void *h, size_t n, CUstream s), (d, h, n, s))
EMU_FORWARD(cuMemcpyDtoHAsync, cuMemcpyDtoHAsync_v2, (void *h, CUdeviceptr d, size_t n, CUstream s),
            (h, d, n, s))
EMU_FORWARD(cuMemcpyDtoDAsync, cuMemcpyDtoDAsync_v2,
            (CUdeviceptr d, CUdeviceptr e, size_t n, CUstream s), (d, e, n, s))
EMU_FORWARD(cuMemcpyHtoD, cuMemcpyHtoD_v2, (CUdeviceptr d, const void *h, size_t n), (d, h, n))
EMU_FORWARD(cuMemcpyDtoH, cuMemcpyDtoH_v2, (void *h, CUdeviceptr d, size_t n), (h, d, n))
EMU_FORWARD(cuMemcpyDtoD, cuMemcpyDtoD_v2, (CUdeviceptr d, CUdeviceptr e, size_t n), (d, e, n))
EMU_FORWARD(cuMemsetD8, cuMemsetD8_v2, (CUdeviceptr d, unsigned char v, size_t n), (d, v, n))
EMU_FORWARD(cuMemsetD32, cuMemsetD32_v2, (CUdeviceptr d, unsigned int v, size_t n), (d, v, n))
EMU_FORWARD(cuStreamWaitValue32, cuStreamWaitValue32_v2,
            (CUstream s, CUdeviceptr a, cuuint32_t v, unsigned int f), (s, a, v, f))
EMU_FORWARD(cuStreamWriteValue32, cuStreamWriteValue32_v2,
            (CUstream s, CUdeviceptr a, cuuint32_t v, unsigned int f), (s, a, v, f))
EMU_FORWARD(cuDeviceTotalMem, cuDeviceTotalMem_v2, (size_t * bytes, CUdevice dev), (bytes, dev))
EMU_FORWARD(cuDeviceGetUuid, cuDeviceGetUuid_v2, (CUuuid * uuid, CUdevice dev), (uuid, dev))

/* ---- cuGetProcAddress --------------------------------------------------------------------- */

struct emu_proc {
    const char *name; /* the plain name, as callers ask for it */
    int since;        /* first CUDA version that gets fn; older versions get legacy */
    void *fn;
    void *legacy;
};

#define P(name, fn)                                                                                \
    {                                                                                              \
#name, 0, (void *)(fn), NULL                                                               \
    }
#define PV(name, since, fn, legacy)                                                                \
    {                                                                                              \
#name, since, (void *)(fn), (void *)(legacy)                                               \
    }

static const struct emu_proc emu_procs[] = {
    P(cuInit, cuInit),
    P(cuDriverGetVersion, cuDriverGetVersion),
    P(cuGetErrorString, cuGetErrorString),
    P(cuGetErrorName, cuGetErrorName),
    PV(cuGetProcAddress, 12000, cuGetProcAddress_v2, cuGetProcAddress),
    P(cuDeviceGet, cuDeviceGet),
    P(cuDeviceGetCount, cuDeviceGetCount),
    P(cuDeviceGetName, cuDeviceGetName),
    P(cuDeviceGetUuid, cuDeviceGetUuid_v2),
    P(cuDeviceTotalMem, cuDeviceTotalMem_v2),
    P(cuDeviceGetAttribute, cuDeviceGetAttribute),
    P(cuDeviceGetPCIBusId, cuDeviceGetPCIBusId),
    P(cuDeviceCanAccessPeer, cuDeviceCanAccessPeer),
    P(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain),
    P(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2),
    P(cuDevicePrimaryCtxGetState, cuDevicePrimaryCtxGetState),
    P(cuDevicePrimaryCtxSetFlags, cuDevicePrimaryCtxSetFlags_v2),
    PV(cuCtxCreate, 12050, cuCtxCreate_v4, cuCtxCreate),
    P(cuCtxDestroy, cuCtxDestroy_v2),
    P(cuCtxSetCurrent, cuCtxSetCurrent),
    P(cuCtxGetCurrent, cuCtxGetCurrent),
    P(cuCtxPushCurrent, cuCtxPushCurrent_v2),
    P(cuCtxPopCurrent, cuCtxPopCurrent_v2),
    P(cuCtxGetDevice, cuCtxGetDevice),
    P(cuCtxGetFlags, cuCtxGetFlags),
    P(cuCtxGetId, cuCtxGetId),
    P(cuCtxGetApiVersion, cuCtxGetApiVersion),
    P(cuCtxGetStreamPriorityRange, cuCtxGetStreamPriorityRange),
    P(cuCtxEnablePeerAccess, cuCtxEnablePeerAccess),
    P(cuCtxSynchronize, cuCtxSynchronize),
    P(cuStreamCreate, cuStreamCreate),
    P(cuStreamCreateWithPriority, cuStreamCreateWithPriority),
    P(cuStreamDestroy, cuStreamDestroy_v2),
    P(cuStreamSynchronize, cuStreamSynchronize),
    P(cuStreamQuery, cuStreamQuery),
    P(cuStreamWaitEvent, cuStreamWaitEvent),
    P(cuStreamAddCallback, cuStreamAddCallback),
    P(cuStreamGetCtx, cuStreamGetCtx),
    P(cuStreamGetDevice, cuStreamGetDevice),
    P(cuStreamGetFlags, cuStreamGetFlags),
    P(cuStreamGetPriority, cuStreamGetPriority),
    P(cuStreamGetId, cuStreamGetId),
    PV(cuStreamBeginCapture, 10010, cuStreamBeginCapture_v2, cuStreamBeginCapture),
    P(cuStreamEndCapture, cuStreamEndCapture),
    P(cuStreamIsCapturing, cuStreamIsCapturing),
    PV(cuStreamGetCaptureInfo, 12030, cuStreamGetCaptureInfo_v3, cuStreamGetCaptureInfo_v2),
    P(cuStreamWaitValue32, cuStreamWaitValue32_v2),
    P(cuStreamWriteValue32, cuStreamWriteValue32_v2),
    P(cuEventCreate, cuEventCreate),
    P(cuEventRecord, cuEventRecord),
    P(cuEventRecordWithFlags, cuEventRecordWithFlags),
    P(cuEventQuery, cuEventQuery),
    P(cuEventSynchronize, cuEventSynchronize),
    P(cuEventDestroy, cuEventDestroy_v2),
    P(cuEventElapsedTime, cuEventElapsedTime_v2),
    P(cuMemAlloc, cuMemAlloc_v2),
    P(cuMemFree, cuMemFree_v2),
    P(cuMemAllocHost, cuMemAllocHost_v2),
    P(cuMemHostAlloc, cuMemHostAlloc),
    P(cuMemFreeHost, cuMemFreeHost),
    P(cuMemHostRegister, cuMemHostRegister_v2),
    P(cuMemHostUnregister, cuMemHostUnregister),
    P(cuMemHostGetDevicePointer, cuMemHostGetDevicePointer_v2),
    P(cuMemHostGetFlags, cuMemHostGetFlags),
    P(cuMemGetInfo, cuMemGetInfo_v2),
    P(cuMemGetAddressRange, cuMemGetAddressRange_v2),
    P(cuMemcpy, cuMemcpy),
    P(cuMemcpyAsync, cuMemcpyAsync),
    P(cuMemcpyHtoD, cuMemcpyHtoD_v2),
    P(cuMemcpyDtoH, cuMemcpyDtoH_v2),
    P(cuMemcpyDtoD, cuMemcpyDtoD_v2),
    P(cuMemcpyHtoDAsync, cuMemcpyHtoDAsync_v2),
    P(cuMemcpyDtoHAsync, cuMemcpyDtoHAsync_v2),
    P(cuMemcpyDtoDAsync, cuMemcpyDtoDAsync_v2),
    P(cuMemsetD8, cuMemsetD8_v2),
    P(cuMemsetD32, cuMemsetD32_v2),
    P(cuMemsetD8Async, cuMemsetD8Async),
    P(cuMemsetD32Async, cuMemsetD32Async),
    P(cuLaunchHostFunc, cuLaunchHostFunc),
    P(cuPointerGetAttribute, cuPointerGetAttribute),
    P(cuGraphDestroy, cuGraphDestroy),
};

#undef P
#undef PV

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *symbolStatus)
{
    (void)flags; /* per-thread and legacy default-stream variants are the same functions here */
    if (!symbol || !pfn)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < sizeof(emu_procs) / sizeof(emu_procs[0]); i++) {
        const struct emu_proc *p = &emu_procs[i];
        if (strcmp(p->name, symbol))
            continue;
        *pfn = p->legacy && cudaVersion < p->since ? p->legacy : p->fn;
        if (symbolStatus)
            *symbolStatus = CU_GET_PROC_ADDRESS_SUCCESS;
        return CUDA_SUCCESS;
    }
    *pfn = NULL;
    if (symbolStatus)
        *symbolStatus = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_ERROR_NOT_FOUND;
}
