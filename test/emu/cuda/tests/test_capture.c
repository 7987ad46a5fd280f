/* Stream capture is reported and recorded work does not run; synchronize is refused. */
#include <stdatomic.h>

#include "emu_test.h"

static atomic_int ran;
static void bump(void *arg)
{
    (void)arg;
    atomic_fetch_add(&ran, 1);
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
    OK(cuEventQuery(ev)); /* a captured record does not touch the event */
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
