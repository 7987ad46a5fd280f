/* Stream capture is reported and recorded work does not run; synchronize is refused; the capture
 * interaction modes forbid queries and synchronisations from other threads (GLOBAL) and from the
 * capturing thread (GLOBAL, THREAD_LOCAL) unless the calling thread is RELAXED. */
#include <pthread.h>
#include <stdatomic.h>

#include "emu_test.h"

static atomic_int ran;
static void bump(void *arg)
{
    (void)arg;
    atomic_fetch_add(&ran, 1);
}

struct other_query {
    CUcontext ctx;
    CUevent ev;
    CUstreamCaptureMode mode; /* the other thread's interaction mode */
    CUresult rc;
};

/* Queries an event (recorded before any capture) from a thread of its own, in mode q->mode. */
static void *other_thread_query(void *arg)
{
    struct other_query *q = arg;
    CUstreamCaptureMode m = q->mode;
    if (cuCtxSetCurrent(q->ctx) != CUDA_SUCCESS ||
        cuThreadExchangeStreamCaptureMode(&m) != CUDA_SUCCESS) {
        q->rc = CUDA_ERROR_UNKNOWN;
        return NULL;
    }
    q->rc = cuEventQuery(q->ev);
    return NULL;
}

/* Begins a capture on s in capture_mode, queries ev from another thread in other_mode, and ends
 * the capture: returns what the query returned; *end_rc what cuStreamEndCapture did. */
static CUresult query_during_capture(CUstream s, CUevent ev, CUstreamCaptureMode capture_mode,
                                     CUstreamCaptureMode other_mode, CUresult *end_rc)
{
    struct other_query q = {.ev = ev, .mode = other_mode};
    pthread_t t;
    CUgraph g = NULL;
    OK(cuCtxGetCurrent(&q.ctx));
    OK(cuStreamBeginCapture(s, capture_mode));
    CHECK(pthread_create(&t, NULL, other_thread_query, &q) == 0);
    pthread_join(t, NULL);
    *end_rc = cuStreamEndCapture(s, &g);
    if (g)
        OK(cuGraphDestroy(g));
    return q.rc;
}

int main(void)
{
    test_setup();
    CUstream s;
    CUevent ev;
    CUgraph g = NULL;
    CUstreamCaptureStatus st;
    cuuint64_t id = 0, id2 = 0;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuEventCreate(&ev, 0));

    OK(cuStreamIsCapturing(s, &st));
    CHECK(st == CU_STREAM_CAPTURE_STATUS_NONE);
    CHECK_CU(cuStreamEndCapture(s, &g), CUDA_ERROR_ILLEGAL_STATE);

    OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    CHECK_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_ILLEGAL_STATE);
    OK(cuStreamIsCapturing(s, &st));
    CHECK(st == CU_STREAM_CAPTURE_STATUS_ACTIVE);
    CUgraph cg = NULL;
    OK(cuStreamGetCaptureInfo(s, &st, &id, &cg, NULL, NULL, NULL));
    CHECK(st == CU_STREAM_CAPTURE_STATUS_ACTIVE && id != 0 && cg != NULL);
    OK(cuLaunchHostFunc(s, bump, NULL));
    OK(emuLaunchKernel(s, 1000000, bump, NULL));
    OK(cuEventRecord(ev, s));
    test_sleep_ms(20);
    CHECK(atomic_load(&ran) == 0);
    CHECK(emuStreamOpsExecuted(s) == 0);
    /* a captured record does not touch the event (queried in RELAXED mode: in GLOBAL or
     * THREAD_LOCAL mode the capturing thread may not query) */
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    OK(cuThreadExchangeStreamCaptureMode(&mode));
    CHECK(mode == CU_STREAM_CAPTURE_MODE_GLOBAL);
    OK(cuEventQuery(ev));
    OK(cuThreadExchangeStreamCaptureMode(&mode));
    CHECK(mode == CU_STREAM_CAPTURE_MODE_RELAXED);
    OK(cuStreamEndCapture(s, &g));
    CHECK(g == cg);
    size_t n = 0;
    OK(emuGraphNumOps(g, &n));
    CHECK(n == 3);
    OK(cuStreamIsCapturing(s, &st));
    CHECK(st == CU_STREAM_CAPTURE_STATUS_NONE);
    OK(cuStreamGetCaptureInfo(s, &st, NULL, NULL, NULL, NULL, NULL));
    CHECK(st == CU_STREAM_CAPTURE_STATUS_NONE);
    OK(cuGraphDestroy(g));
    CHECK_CU(cuGraphDestroy(g), CUDA_ERROR_INVALID_VALUE);

    /* Synchronize and query during capture are refused and invalidate the capture. */
    OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(cuStreamGetCaptureInfo(s, &st, &id2, NULL, NULL, NULL, NULL));
    CHECK(id2 != id);
    CHECK_CU(cuStreamSynchronize(s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    OK(cuStreamIsCapturing(s, &st));
    CHECK(st == CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    CHECK_CU(cuLaunchHostFunc(s, bump, NULL), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    CHECK_CU(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    CHECK(g == NULL);
    OK(cuStreamIsCapturing(s, &st));
    CHECK(st == CU_STREAM_CAPTURE_STATUS_NONE);

    OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CHECK_CU(cuStreamQuery(s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CHECK_CU(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);

    /* The capturing thread's own query in GLOBAL (its default) mode invalidates its capture. */
    OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    CHECK_CU(cuEventQuery(ev), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CHECK_CU(cuCtxSynchronize(), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CHECK_CU(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);

    /* Another thread's query: refused during a GLOBAL capture unless that thread is RELAXED (or
     * THREAD_LOCAL); ignored by a THREAD_LOCAL or RELAXED capture. */
    CUresult end_rc;
    CHECK_CU(query_during_capture(s, ev, CU_STREAM_CAPTURE_MODE_GLOBAL,
                                  CU_STREAM_CAPTURE_MODE_GLOBAL, &end_rc),
             CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CHECK(end_rc == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    OK(query_during_capture(s, ev, CU_STREAM_CAPTURE_MODE_GLOBAL, CU_STREAM_CAPTURE_MODE_RELAXED,
                            &end_rc));
    CHECK(end_rc == CUDA_SUCCESS);
    OK(query_during_capture(s, ev, CU_STREAM_CAPTURE_MODE_GLOBAL,
                            CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, &end_rc));
    CHECK(end_rc == CUDA_SUCCESS);
    OK(query_during_capture(s, ev, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
                            CU_STREAM_CAPTURE_MODE_GLOBAL, &end_rc));
    CHECK(end_rc == CUDA_SUCCESS);
    OK(query_during_capture(s, ev, CU_STREAM_CAPTURE_MODE_RELAXED, CU_STREAM_CAPTURE_MODE_GLOBAL,
                            &end_rc));
    CHECK(end_rc == CUDA_SUCCESS);
    mode = 7;
    CHECK_CU(cuThreadExchangeStreamCaptureMode(&mode), CUDA_ERROR_INVALID_VALUE);
    CHECK_CU(cuStreamBeginCapture(s, 7), CUDA_ERROR_INVALID_VALUE);

    /* The legacy stream cannot capture. */
    CHECK_CU(cuStreamBeginCapture(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL),
             CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);

    /* After capture the stream runs work again. */
    OK(cuLaunchHostFunc(s, bump, NULL));
    OK(cuStreamSynchronize(s));
    CHECK(atomic_load(&ran) == 1);

    /* A graph left undestroyed at capture end is freed by cuGraphDestroy only; end with one open.
     */
    OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    OK(cuLaunchHostFunc(s, bump, NULL));
    OK(cuStreamEndCapture(s, &g));
    OK(cuGraphDestroy(g));

    OK(cuEventDestroy(ev));
    OK(cuStreamDestroy(s));
    printf("PASS\n");
    return 0;
}
