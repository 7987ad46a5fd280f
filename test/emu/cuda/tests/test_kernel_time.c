/* An emulated kernel takes its duration; cuEventElapsedTime measures it. */
#include <stdint.h>

#include "emu_test.h"

static int touched;
static void touch(void *arg)
{
    (void)arg;
    touched++;
}

int main(void)
{
    test_setup();
    CUstream s;
    CUevent a, b, nt;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuEventCreate(&a, 0));
    OK(cuEventCreate(&b, 0));
    OK(cuEventCreate(&nt, CU_EVENT_DISABLE_TIMING));
    float ms = -1;

    /* not recorded yet */
    CHECK_CU(cuEventElapsedTime(&ms, a, b), CUDA_ERROR_INVALID_HANDLE);

    const uint64_t dur[] = {2000000ull, 20000000ull, 50000000ull};
    for (int i = 0; i < 3; i++) {
        uint64_t t0 = emuNowNs();
        OK(cuEventRecord(a, s));
        OK(emuLaunchKernel(s, dur[i], touch, NULL));
        OK(cuEventRecord(b, s));
        OK(cuEventSynchronize(b));
        uint64_t t1 = emuNowNs();
        OK(cuEventElapsedTime(&ms, a, b));
        double want = (double)dur[i] / 1e6;
        printf("kernel %.1f ms: elapsed %.3f ms (host %.3f ms)\n", want, ms,
               (double)(t1 - t0) / 1e6);
        CHECK(ms >= want * 0.999);
        /* The model bounds a kernel from below only (it sleeps, and a loaded host wakes it
         * late: 8 TSan ranks on 2 cores); the upper bound only catches a unit slip (x1000) */
        CHECK(ms < want + 1000.0);
        CHECK((double)(t1 - t0) / 1e6 >= want);
        OK(cuEventElapsedTime(&ms, b, a));
        CHECK(ms <= -want * 0.999);
    }
    CHECK(touched == 3);

    /* pending end event */
    uint32_t *gate = test_gate_new();
    OK(cuEventRecord(a, s));
    test_gate_close(s, gate);
    OK(emuLaunchKernel(s, 1000000ull, NULL, NULL));
    OK(cuEventRecord(b, s));
    CHECK_CU(cuEventElapsedTime(&ms, a, b), CUDA_ERROR_NOT_READY);
    test_gate_open(gate);
    OK(cuStreamSynchronize(s));
    OK(cuEventElapsedTime(&ms, a, b));

    /* timing disabled */
    OK(cuEventRecord(nt, s));
    OK(cuEventSynchronize(nt));
    CHECK_CU(cuEventElapsedTime(&ms, a, nt), CUDA_ERROR_INVALID_HANDLE);
    CHECK_CU(cuEventElapsedTime(NULL, a, b), CUDA_ERROR_INVALID_VALUE);

    /* a kernel without fn and zero duration still counts as an op */
    uint64_t before = emuStreamOpsExecuted(s);
    OK(emuLaunchKernel(s, 0, NULL, NULL));
    OK(cuStreamSynchronize(s));
    CHECK(emuStreamOpsExecuted(s) == before + 1);

    OK(cuEventDestroy(a));
    OK(cuEventDestroy(b));
    OK(cuEventDestroy(nt));
    OK(cuStreamDestroy(s));
    OK(cuMemFreeHost(gate));
    printf("PASS\n");
    return 0;
}
