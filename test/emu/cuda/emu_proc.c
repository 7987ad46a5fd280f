/* cuGetProcAddress, and the unversioned ("plain") exports of names that cuda.h maps to versioned
 * ones. A plain name whose legacy signature is the versioned one's (cuMemAlloc, cuStreamDestroy,
 * ...) forwards to it. Four legacy signatures differ in their arguments; their plain exports keep
 * the real driver's legacy signature: cuCtxCreate(pctx, flags, dev), cuStreamBeginCapture(stream),
 * cuStreamGetCaptureInfo(stream, status, id), cuGetProcAddress(symbol, pfn, version, flags). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_cuda.h"
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
#undef cuIpcOpenMemHandle

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
EMU_FORWARD(cuIpcOpenMemHandle, cuIpcOpenMemHandle_v2,
            (CUdeviceptr * d, CUipcMemHandle h, unsigned int f), (d, h, f))

/* ---- cuGetProcAddress --------------------------------------------------------------------- */

/* The per-thread variants (emu_ptsz.c); only their addresses are taken here. */
void cuStreamSynchronize_ptsz(void);
void cuStreamQuery_ptsz(void);
void cuStreamWaitEvent_ptsz(void);
void cuStreamAddCallback_ptsz(void);
void cuStreamGetCtx_ptsz(void);
void cuStreamGetFlags_ptsz(void);
void cuStreamGetPriority_ptsz(void);
void cuStreamGetId_ptsz(void);
void cuStreamEndCapture_ptsz(void);
void cuStreamIsCapturing_ptsz(void);
void cuStreamWaitValue32_v2_ptsz(void);
void cuStreamWriteValue32_v2_ptsz(void);
void cuEventRecord_ptsz(void);
void cuEventRecordWithFlags_ptsz(void);
void cuMemcpy_ptds(void);
void cuMemcpyAsync_ptsz(void);
void cuMemcpyHtoD_v2_ptds(void);
void cuMemcpyDtoH_v2_ptds(void);
void cuMemcpyDtoD_v2_ptds(void);
void cuMemcpyHtoDAsync_v2_ptsz(void);
void cuMemcpyDtoHAsync_v2_ptsz(void);
void cuMemcpyDtoDAsync_v2_ptsz(void);
void cuMemsetD8_v2_ptds(void);
void cuMemsetD32_v2_ptds(void);
void cuMemsetD8Async_ptsz(void);
void cuMemsetD32Async_ptsz(void);
void cuLaunchHostFunc_ptsz(void);
void cuStreamBeginCapture_v2_ptsz(void);
void cuStreamGetCaptureInfo_v3_ptsz(void);
void cuLaunchKernel_ptsz(void);

struct emu_proc {
    const char *name; /* the plain name, as callers ask for it */
    int since;        /* first CUDA version that gets fn; older versions get legacy */
    void *fn;
    void *legacy;
    void *ptsz; /* the per-thread default stream variant (_ptsz/_ptds), or NULL: the same */
};

#define P(name, fn)                                                                                \
    {                                                                                              \
#name, 0, (void *)(fn), NULL, NULL                                                         \
    }
#define PT(name, fn, ptsz)                                                                         \
    {                                                                                              \
#name, 0, (void *)(fn), NULL, (void *)(ptsz)                                               \
    }
#define PV(name, since, fn, legacy)                                                                \
    {                                                                                              \
#name, since, (void *)(fn), (void *)(legacy), NULL                                         \
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
    PT(cuStreamSynchronize, cuStreamSynchronize, cuStreamSynchronize_ptsz),
    PT(cuStreamQuery, cuStreamQuery, cuStreamQuery_ptsz),
    PT(cuStreamWaitEvent, cuStreamWaitEvent, cuStreamWaitEvent_ptsz),
    PT(cuStreamAddCallback, cuStreamAddCallback, cuStreamAddCallback_ptsz),
    PT(cuStreamGetCtx, cuStreamGetCtx, cuStreamGetCtx_ptsz),
    P(cuStreamGetDevice, cuStreamGetDevice),
    PT(cuStreamGetFlags, cuStreamGetFlags, cuStreamGetFlags_ptsz),
    PT(cuStreamGetPriority, cuStreamGetPriority, cuStreamGetPriority_ptsz),
    PT(cuStreamGetId, cuStreamGetId, cuStreamGetId_ptsz),
    {"cuStreamBeginCapture", 10010, (void *)cuStreamBeginCapture_v2, (void *)cuStreamBeginCapture,
     (void *)cuStreamBeginCapture_v2_ptsz},
    PT(cuStreamEndCapture, cuStreamEndCapture, cuStreamEndCapture_ptsz),
    PT(cuStreamIsCapturing, cuStreamIsCapturing, cuStreamIsCapturing_ptsz),
    P(cuThreadExchangeStreamCaptureMode, cuThreadExchangeStreamCaptureMode),
    {"cuStreamGetCaptureInfo", 12030, (void *)cuStreamGetCaptureInfo_v3,
     (void *)cuStreamGetCaptureInfo_v2, (void *)cuStreamGetCaptureInfo_v3_ptsz},
    PT(cuStreamWaitValue32, cuStreamWaitValue32_v2, cuStreamWaitValue32_v2_ptsz),
    PT(cuStreamWriteValue32, cuStreamWriteValue32_v2, cuStreamWriteValue32_v2_ptsz),
    P(cuEventCreate, cuEventCreate),
    PT(cuEventRecord, cuEventRecord, cuEventRecord_ptsz),
    PT(cuEventRecordWithFlags, cuEventRecordWithFlags, cuEventRecordWithFlags_ptsz),
    P(cuEventQuery, cuEventQuery),
    P(cuEventSynchronize, cuEventSynchronize),
    P(cuEventDestroy, cuEventDestroy_v2),
    P(cuEventElapsedTime, cuEventElapsedTime_v2),
    P(cuIpcGetEventHandle, cuIpcGetEventHandle),
    P(cuIpcOpenEventHandle, cuIpcOpenEventHandle),
    P(cuIpcGetMemHandle, cuIpcGetMemHandle),
    P(cuIpcOpenMemHandle, cuIpcOpenMemHandle_v2),
    P(cuIpcCloseMemHandle, cuIpcCloseMemHandle),
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
    PT(cuMemcpy, cuMemcpy, cuMemcpy_ptds),
    PT(cuMemcpyAsync, cuMemcpyAsync, cuMemcpyAsync_ptsz),
    PT(cuMemcpyHtoD, cuMemcpyHtoD_v2, cuMemcpyHtoD_v2_ptds),
    PT(cuMemcpyDtoH, cuMemcpyDtoH_v2, cuMemcpyDtoH_v2_ptds),
    PT(cuMemcpyDtoD, cuMemcpyDtoD_v2, cuMemcpyDtoD_v2_ptds),
    PT(cuMemcpyHtoDAsync, cuMemcpyHtoDAsync_v2, cuMemcpyHtoDAsync_v2_ptsz),
    PT(cuMemcpyDtoHAsync, cuMemcpyDtoHAsync_v2, cuMemcpyDtoHAsync_v2_ptsz),
    PT(cuMemcpyDtoDAsync, cuMemcpyDtoDAsync_v2, cuMemcpyDtoDAsync_v2_ptsz),
    PT(cuMemsetD8, cuMemsetD8_v2, cuMemsetD8_v2_ptds),
    PT(cuMemsetD32, cuMemsetD32_v2, cuMemsetD32_v2_ptds),
    PT(cuMemsetD8Async, cuMemsetD8Async, cuMemsetD8Async_ptsz),
    PT(cuMemsetD32Async, cuMemsetD32Async, cuMemsetD32Async_ptsz),
    PT(cuLaunchHostFunc, cuLaunchHostFunc, cuLaunchHostFunc_ptsz),
    P(cuPointerGetAttribute, cuPointerGetAttribute),
    P(cuGraphDestroy, cuGraphDestroy),
    P(cuModuleLoadData, cuModuleLoadData),
    P(cuModuleGetFunction, cuModuleGetFunction),
    P(cuModuleUnload, cuModuleUnload),
    PT(cuLaunchKernel, cuLaunchKernel, cuLaunchKernel_ptsz),
    P(cuLaunchKernelEx, cuLaunchKernelEx),
    P(cuMemBatchDecompressAsync, cuMemBatchDecompressAsync),
    P(cuCtxRecordEvent, cuCtxRecordEvent),
    P(cuCtxWaitEvent, cuCtxWaitEvent),
    P(cuGraphCreate, cuGraphCreate),
    P(cuGraphAddEventRecordNode, cuGraphAddEventRecordNode),
    P(cuGraphAddEventWaitNode, cuGraphAddEventWaitNode),
    P(cuGraphAddHostNode, cuGraphAddHostNode),
    P(cuGraphAddNode, cuGraphAddNode_v2),
    P(cuGraphEventRecordNodeSetEvent, cuGraphEventRecordNodeSetEvent),
    P(cuGraphEventWaitNodeSetEvent, cuGraphEventWaitNodeSetEvent),
    P(cuGraphExecEventRecordNodeSetEvent, cuGraphExecEventRecordNodeSetEvent),
    P(cuGraphExecEventWaitNodeSetEvent, cuGraphExecEventWaitNodeSetEvent),
    P(cuGraphInstantiate, cuGraphInstantiateWithFlags),
    P(cuGraphLaunch, cuGraphLaunch),
    P(cuGraphExecDestroy, cuGraphExecDestroy),
};

#undef P
#undef PT
#undef PV

#define EMU_NPROCS (sizeof(emu_procs) / sizeof(emu_procs[0]))

/* Lookups per entry and flavour (flags & 3). */
static uint64_t emu_proc_count[EMU_NPROCS][4];
static pthread_once_t emu_proc_once = PTHREAD_ONCE_INIT;

void emuProcDump(void)
{
    const char *path = getenv("EMU_CUDA_PROC_DUMP");
    FILE *f = path && *path ? fopen(path, "a") : NULL;

    if (!f)
        return;
    for (size_t i = 0; i < EMU_NPROCS; i++)
        for (int fl = 0; fl < 4; fl++) {
            uint64_t n = __atomic_load_n(&emu_proc_count[i][fl], __ATOMIC_RELAXED);
            if (n)
                fprintf(f, "%s %d %llu\n", emu_procs[i].name, fl, (unsigned long long)n);
        }
    fclose(f);
}

static void emu_proc_init(void)
{
    if (getenv("EMU_CUDA_PROC_DUMP"))
        atexit(emuProcDump);
}

uint64_t emuProcLookups(const char *symbol, cuuint64_t flags)
{
    for (size_t i = 0; symbol && i < EMU_NPROCS; i++)
        if (!strcmp(emu_procs[i].name, symbol))
            return __atomic_load_n(&emu_proc_count[i][flags & 3], __ATOMIC_RELAXED);
    return 0;
}

/* EMU_CUDA_PROC_UNNAMED=name,...: those names are answered with a function that no exported symbol
 * names (as a driver's internal entry or trampoline would be), which forwards to the driver's own.
 */
static CUresult emu_unnamed_event_record(CUevent hEvent, CUstream hStream)
{
    return cuEventRecord(hEvent, hStream);
}

static CUresult emu_unnamed_stream_wait_event(CUstream hStream, CUevent hEvent, unsigned int flags)
{
    return cuStreamWaitEvent(hStream, hEvent, flags);
}

static CUresult emu_unnamed_ctx_synchronize(void)
{
    return cuCtxSynchronize();
}

static CUresult emu_unnamed_event_create(CUevent *phEvent, unsigned int Flags)
{
    return cuEventCreate(phEvent, Flags);
}

static void *emu_proc_unnamed(const char *symbol)
{
    static const struct {
        const char *name;
        void *fn;
    } unnamed[] = {
        {"cuEventRecord", (void *)emu_unnamed_event_record},
        {"cuStreamWaitEvent", (void *)emu_unnamed_stream_wait_event},
        {"cuCtxSynchronize", (void *)emu_unnamed_ctx_synchronize},
        {"cuEventCreate", (void *)emu_unnamed_event_create},
    };
    const char *list = getenv("EMU_CUDA_PROC_UNNAMED");
    size_t n = strlen(symbol);

    for (const char *s = list; s && *s; s = strchr(s, ',') ? strchr(s, ',') + 1 : "") {
        if (strncmp(s, symbol, n) || (s[n] && s[n] != ','))
            continue;
        for (size_t i = 0; i < sizeof(unnamed) / sizeof(unnamed[0]); i++)
            if (!strcmp(unnamed[i].name, symbol))
                return unnamed[i].fn;
    }
    return NULL;
}

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *symbolStatus)
{
    pthread_once(&emu_proc_once, emu_proc_init);
    if (!symbol || !pfn || (flags & ~(cuuint64_t)3) || flags == 3)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < EMU_NPROCS; i++) {
        const struct emu_proc *p = &emu_procs[i];
        if (strcmp(p->name, symbol))
            continue;
        /* DEFAULT (0) is the legacy stream here (a program not compiled for per-thread streams) */
        if (p->legacy && cudaVersion < p->since)
            *pfn = p->legacy;
        else if (p->ptsz && (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM))
            *pfn = p->ptsz;
        else
            *pfn = p->fn;
        if (emu_proc_unnamed(symbol))
            *pfn = emu_proc_unnamed(symbol);
        __atomic_fetch_add(&emu_proc_count[i][flags & 3], 1, __ATOMIC_RELAXED);
        if (symbolStatus)
            *symbolStatus = CU_GET_PROC_ADDRESS_SUCCESS;
        return CUDA_SUCCESS;
    }
    *pfn = NULL;
    if (symbolStatus)
        *symbolStatus = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_ERROR_NOT_FOUND;
}
