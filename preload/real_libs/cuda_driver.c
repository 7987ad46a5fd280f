/* The CUDA driver, loaded at run time (PROPHET_CUDA_LIB, default libcuda.so.1): libprophet.so never
 * links libcuda, so a machine without a driver still runs the job (in passthrough). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "real_libs/cuda_driver.h"
#include "real_libs/dlsym_real.h"
#include "symbol_export.h"
#include "debug_lines/log_line.h"
#include "config/process_config.h"

prophet_cuda_api_t prophet_cu;

static pthread_once_t prophet_cuda_once = PTHREAD_ONCE_INIT;
static int prophet_cuda_rc = -1;
static pthread_once_t prophet_cuda_open_once = PTHREAD_ONCE_INIT;
static void *prophet_cuda_h;
static char prophet_cuda_err[512];

/* cuda.h maps some names to versioned symbols (cuStreamDestroy -> cuStreamDestroy_v2): the macro
 * expansion, stringified, is the symbol to look up. */
#define PROPHET_CU(field, fn)                                                                      \
    do {                                                                                           \
        prophet_cu.field = (__typeof__(prophet_cu.field))prophet_dlsym_real(h, PROPHET_XSTR(fn));  \
        if (!prophet_cu.field) {                                                                   \
            missing = PROPHET_XSTR(fn);                                                            \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)

static const char *prophet_cuda_lib(void)
{
    return prophet_cfg.cuda_lib[0] ? prophet_cfg.cuda_lib : "libcuda.so.1";
}

static void prophet_cuda_open(void)
{
    const char *err;

    prophet_cuda_h = dlopen(prophet_cuda_lib(), RTLD_NOW | RTLD_LOCAL);
    if (!prophet_cuda_h && (err = dlerror()))
        snprintf(prophet_cuda_err, sizeof(prophet_cuda_err), "%s", err);
}

/* The handle stays open: the process may use the driver itself. The wrapped entry points
 * (cuda_hooks.c) resolve the driver's functions through it too. */
void *prophet_cuda_handle(void)
{
    pthread_once(&prophet_cuda_open_once, prophet_cuda_open);
    return prophet_cuda_h;
}

/* prophet_cu holds the driver's OWN functions (looked up in the driver's handle, never the
 * preload's wrappers): the preload's CUDA calls never go through the holding engine. */
static void prophet_cuda_load_once(void)
{
    const char *lib = prophet_cuda_lib();
    const char *missing = NULL;
    void *h = prophet_cuda_handle();

    if (!h) {
        prophet_msg(PROPHET_LOG_WARN,
                    "no CUDA driver: PROPHET_CUDA_LIB=%s does not load (%s); the preload passes "
                    "every call through, nothing is scheduled",
                    lib, prophet_cuda_err[0] ? prophet_cuda_err : "dlopen failed");
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
    prophet_cu.StreamGetFlags = (__typeof__(prophet_cu.StreamGetFlags))prophet_dlsym_real(
        h, PROPHET_XSTR(cuStreamGetFlags));
    prophet_cu.MemGetAddressRange = (__typeof__(prophet_cu.MemGetAddressRange))prophet_dlsym_real(
        h, PROPHET_XSTR(cuMemGetAddressRange));
    prophet_cu.ThreadExchangeStreamCaptureMode =
        (__typeof__(prophet_cu.ThreadExchangeStreamCaptureMode))prophet_dlsym_real(
            h, PROPHET_XSTR(cuThreadExchangeStreamCaptureMode));
    prophet_cuda_rc = 0;
    return;
fail:
    prophet_msg(PROPHET_LOG_WARN,
                "CUDA driver PROPHET_CUDA_LIB=%s lacks %s; the preload passes every call "
                "through, nothing is scheduled",
                lib, missing);
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

CUstreamCaptureMode prophet_capture_relax(void)
{
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;

    if (!prophet_cu.ThreadExchangeStreamCaptureMode ||
        prophet_cu.ThreadExchangeStreamCaptureMode(&mode) != CUDA_SUCCESS)
        return CU_STREAM_CAPTURE_MODE_RELAXED; /* nothing to put back */
    return mode;
}

void prophet_capture_restore(CUstreamCaptureMode mode)
{
    if (mode != CU_STREAM_CAPTURE_MODE_RELAXED && prophet_cu.ThreadExchangeStreamCaptureMode)
        prophet_cu.ThreadExchangeStreamCaptureMode(&mode);
}
