/* Tiny check helpers for the emulated-driver tests. */
#ifndef EMU_TEST_H
#define EMU_TEST_H

#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "emu_cuda.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);               \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#define CHECK_CU(call, want)                                                                       \
    do {                                                                                           \
        CUresult r_ = (call);                                                                      \
        if (r_ != (want)) {                                                                        \
            const char *n_ = NULL;                                                                 \
            cuGetErrorName(r_, &n_);                                                               \
            fprintf(stderr, "%s:%d: %s returned %d (%s), want %s\n", __FILE__, __LINE__, #call,    \
                    (int)r_, n_ ? n_ : "?", #want);                                                \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#define OK(call) CHECK_CU(call, CUDA_SUCCESS)

static inline void test_sleep_ms(unsigned ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* cuInit, primary context of device 0 made current. */
static inline CUcontext test_setup(void)
{
    CUcontext ctx;
    CUdevice dev;
    OK(cuInit(0));
    OK(cuDeviceGet(&dev, 0));
    OK(cuDevicePrimaryCtxRetain(&ctx, dev));
    OK(cuCtxSetCurrent(ctx));
    return ctx;
}

/* A gate for tests: the stream holds until test_gate_open (deterministic, unlike timing). */
static inline uint32_t *test_gate_new(void)
{
    uint32_t *f;
    OK(cuMemHostAlloc((void **)&f, sizeof(*f), 0));
    __atomic_store_n(f, 0, __ATOMIC_RELEASE);
    return f;
}

static inline void test_gate_close(CUstream s, uint32_t *f)
{
    uint32_t next = __atomic_load_n(f, __ATOMIC_ACQUIRE) + 1;
    OK(cuStreamWaitValue32(s, (CUdeviceptr)(uintptr_t)f, next, CU_STREAM_WAIT_VALUE_GEQ));
}

static inline void test_gate_open(uint32_t *f)
{
    emuWriteValue32(f, __atomic_load_n(f, __ATOMIC_ACQUIRE) + 1);
}

#endif
