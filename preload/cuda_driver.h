/* The CUDA driver (cuda_driver.c), loaded at run time (PROPHET_CUDA_LIB): the entry points the
 * preload itself calls. A leaf: it calls only settings.h and log_line.h. */
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
} prophet_cuda_api_t;

extern prophet_cuda_api_t prophet_cu;
/* Loads the driver once (PROPHET_CUDA_LIB). 0 ok; -1 unavailable (one INFO line said why). */
int prophet_cuda_load(void);
const char *prophet_cuda_errstr(CUresult rc);
/* The driver's handle (PROPHET_CUDA_LIB, default libcuda.so.1), opened once; NULL if absent. Needs
 * prophet_cfg loaded (prophet_init). */
void *prophet_cuda_handle(void);

#endif
