/* The CUDA driver (cuda_driver.c), loaded at run time (PROPHET_CUDA_LIB): the entry points the
 * preload itself calls. A leaf: it calls only process_config.h and log_line.h. */
#ifndef PROPHET_CUDA_DRIVER_H
#define PROPHET_CUDA_DRIVER_H

#include <cuda.h>

typedef struct prophet_cuda_api {
    __typeof__(&cuCtxGetCurrent) CtxGetCurrent;
    __typeof__(&cuCtxSetCurrent) CtxSetCurrent;
    __typeof__(&cuStreamCreate) StreamCreate;
    __typeof__(&cuStreamDestroy) StreamDestroy;
    __typeof__(&cuStreamSynchronize) StreamSynchronize;
    __typeof__(&cuStreamIsCapturing) StreamIsCapturing;
    __typeof__(&cuStreamWaitEvent) StreamWaitEvent;
    __typeof__(&cuStreamWaitValue32) StreamWaitValue32;
    __typeof__(&cuStreamWriteValue32) StreamWriteValue32;
    __typeof__(&cuEventCreate) EventCreate;
    __typeof__(&cuEventDestroy) EventDestroy;
    __typeof__(&cuEventRecord) EventRecord;
    __typeof__(&cuEventQuery) EventQuery;
    __typeof__(&cuEventSynchronize) EventSynchronize;
    __typeof__(&cuEventElapsedTime) EventElapsedTime;
    __typeof__(&cuMemHostAlloc) MemHostAlloc;
    __typeof__(&cuMemHostGetDevicePointer) MemHostGetDevicePointer;
    __typeof__(&cuGetErrorString) GetErrorString;
    __typeof__(&cuStreamGetFlags) StreamGetFlags; /* optional (NULL when the driver lacks it) */
    __typeof__(&cuMemGetAddressRange) MemGetAddressRange; /* optional: a freed allocation's size */
    /* optional (NULL when the driver lacks it: CUDA < 10.1, which has no capture modes either) */
    __typeof__(&cuThreadExchangeStreamCaptureMode) ThreadExchangeStreamCaptureMode;
} prophet_cuda_api_t;

extern prophet_cuda_api_t prophet_cu;
/* Loads the driver once (PROPHET_CUDA_LIB). 0 ok; -1 unavailable (one WARN line said why). */
int prophet_cuda_load(void);
const char *prophet_cuda_errstr(CUresult rc);
/* Stream capture. The preload's own host waits and queries (on its own events and its internal
 * stream, never on a capturing stream) are "potentially unsafe" calls in CUDA's terms: made in a
 * thread's default GLOBAL mode while that thread captures, or while any thread captures in GLOBAL
 * mode (torch.cuda.graph's default), they fail and invalidate the capture. The job's own calls
 * would too, but these are the preload's, not the job's: they are made in RELAXED mode, which
 * CUDA provides for this case (NCCL makes its own so). prophet_capture_relax() puts the calling
 * thread in RELAXED mode and returns the mode that prophet_capture_restore() puts back; both do
 * nothing where the driver lacks the entry point. */
CUstreamCaptureMode prophet_capture_relax(void);
void prophet_capture_restore(CUstreamCaptureMode mode);
/* The driver's handle (PROPHET_CUDA_LIB, default libcuda.so.1), opened once; NULL if absent. Needs
 * prophet_cfg loaded (prophet_init). */
void *prophet_cuda_handle(void);

#endif
