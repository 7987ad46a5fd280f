/* The CUDA driver, loaded at run time (PROPHET_CUDA_LIB, default libcuda.so.1): libprophet.so never
 * links libcuda, so a machine without a driver still runs the job (in passthrough). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "cuda_driver.h"
#include "export.h"
#include "log_line.h"
#include "settings.h"

prophet_cuda_api_t prophet_cu;

static pthread_once_t prophet_cuda_once = PTHREAD_ONCE_INIT;
static int prophet_cuda_rc = -1;

/* cuda.h maps some names to versioned symbols (cuStreamDestroy -> cuStreamDestroy_v2): the macro
 * expansion, stringified, is the symbol to look up. */
#define PROPHET_CU(field, fn)                                                                      \
    do {                                                                                           \
        prophet_cu.field = (__typeof__(prophet_cu.field))dlsym(h, PROPHET_XSTR(fn));               \
        if (!prophet_cu.field) {                                                                   \
            missing = PROPHET_XSTR(fn);                                                            \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)

static void prophet_cuda_load_once(void)
{
    const char *lib = prophet_cfg.cuda_lib[0] ? prophet_cfg.cuda_lib : "libcuda.so.1";
    const char *missing = NULL;
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);

    if (!h) {
        prophet_msg(PROPHET_LOG_INFO, "no CUDA driver (%s); passing every call through", dlerror());
        return;
    }
    PROPHET_CU(CtxGetCurrent, cuCtxGetCurrent);
    PROPHET_CU(CtxSetCurrent, cuCtxSetCurrent);
    PROPHET_CU(StreamCreate, cuStreamCreate);
    PROPHET_CU(StreamDestroy, cuStreamDestroy);
    PROPHET_CU(StreamSynchronize, cuStreamSynchronize);
    PROPHET_CU(StreamIsCapturing, cuStreamIsCapturing);
    PROPHET_CU(StreamWaitEvent, cuStreamWaitEvent);
    PROPHET_CU(StreamWaitValue32, cuStreamWaitValue32);
    PROPHET_CU(StreamWriteValue32, cuStreamWriteValue32);
    PROPHET_CU(EventCreate, cuEventCreate);
    PROPHET_CU(EventDestroy, cuEventDestroy);
    PROPHET_CU(EventRecord, cuEventRecord);
    PROPHET_CU(EventQuery, cuEventQuery);
    PROPHET_CU(EventSynchronize, cuEventSynchronize);
    PROPHET_CU(EventElapsedTime, cuEventElapsedTime);
    PROPHET_CU(MemHostAlloc, cuMemHostAlloc);
    PROPHET_CU(MemHostGetDevicePointer, cuMemHostGetDevicePointer);
    PROPHET_CU(GetErrorString, cuGetErrorString);
    prophet_cuda_rc = 0;
    return;
fail:
    prophet_msg(PROPHET_LOG_INFO, "CUDA driver %s lacks %s; passing every call through", lib,
                missing);
    /* the handle stays open: the process may use the driver itself */
}

int prophet_cuda_load(void)
{
    pthread_once(&prophet_cuda_once, prophet_cuda_load_once);
    return prophet_cuda_rc;
}

const char *prophet_cuda_errstr(CUresult rc)
{
    const char *s = NULL;

    if (prophet_cu.GetErrorString && prophet_cu.GetErrorString(rc, &s) == CUDA_SUCCESS && s)
        return s;
    return "unknown CUDA error";
}
