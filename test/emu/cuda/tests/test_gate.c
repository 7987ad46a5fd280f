/* A WaitValue32 gate holds back the work behind it until the value is written: by the host
 * (with emuWriteValue32, and with a plain atomic store seen by polling) and by
 * cuStreamWriteValue32 from another stream. */
#include <stdatomic.h>
#include <stdint.h>

#include "emu_test.h"

static atomic_int ran;
static uint64_t ran_at_ns;

static void mark_ran(void *arg)
{
    (void)arg;
    ran_at_ns = emuNowNs();
    atomic_store(&ran, 1);
}

static uint64_t written_at_ns;
static void mark_written(void *arg)
{
    (void)arg;
    written_at_ns = emuNowNs();
}

/* Gate on *flag >= gen on stream s, then a host func; check it waits for write(). */
static void gate_host_write(CUstream s, uint32_t *flag, uint32_t gen, int plain_store)
{
    CUdeviceptr d;
    OK(cuMemHostGetDevicePointer(&d, flag, 0));
    atomic_store(&ran, 0);
    OK(cuStreamWaitValue32(s, d, gen, CU_STREAM_WAIT_VALUE_GEQ));
    OK(cuLaunchHostFunc(s, mark_ran, NULL));
    test_sleep_ms(30);
    CHECK(atomic_load(&ran) == 0);
    CHECK_CU(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
    CHECK(emuStreamOpsPending(s) == 2);
    /* a value below the gate does not open it */
    emuWriteValue32(flag, gen - 1);
    test_sleep_ms(10);
    CHECK(atomic_load(&ran) == 0);
    uint64_t t0 = emuNowNs();
    if (plain_store)
        __atomic_store_n(flag, gen, __ATOMIC_RELEASE);
    else
        emuWriteValue32(flag, gen);
    OK(cuStreamSynchronize(s));
    CHECK(atomic_load(&ran) == 1);
    CHECK(ran_at_ns >= t0);
    printf("gate latency (%s): %.1f us\n", plain_store ? "plain store, polled" : "emuWriteValue32",
           (double)(ran_at_ns - t0) / 1e3);
    CHECK(ran_at_ns - t0 < 1000000000ull); /* sanity bound only: 2 shared cores */
}

int main(void)
{
    test_setup();
    CUstream a, b;
    OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    OK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    uint32_t *flag;
    OK(cuMemHostAlloc((void **)&flag, 64, CU_MEMHOSTALLOC_DEVICEMAP));
    *flag = 0;

    gate_host_write(a, flag, 1, 0);
    gate_host_write(a, flag, 2, 1);

    /* Stream write from another stream: b writes after a 40 ms kernel. */
    CUdeviceptr d;
    OK(cuMemHostGetDevicePointer(&d, flag, 0));
    atomic_store(&ran, 0);
    OK(cuStreamWaitValue32(a, d, 3, CU_STREAM_WAIT_VALUE_GEQ));
    OK(cuLaunchHostFunc(a, mark_ran, NULL));
    uint32_t *hold = test_gate_new();
    test_gate_close(b, hold);
    OK(emuLaunchKernel(b, 10000000ull, NULL, NULL));
    OK(cuLaunchHostFunc(b, mark_written, NULL));
    OK(cuStreamWriteValue32(b, d, 3, 0));
    test_sleep_ms(10);
    CHECK(atomic_load(&ran) == 0);
    test_gate_open(hold);
    OK(cuStreamSynchronize(a));
    CHECK(atomic_load(&ran) == 1);
    OK(cuStreamSynchronize(b));
    CHECK(ran_at_ns >= written_at_ns);
    CHECK(*flag == 3);
    printf("gate latency (cuStreamWriteValue32): %.1f us\n",
           (double)(ran_at_ns - written_at_ns) / 1e3);

    /* GEQ compares as (int32_t)(*addr - value) >= 0: it survives wrap-around. */
    emuWriteValue32(flag, 5);
    OK(cuStreamWaitValue32(a, d, 0xfffffffeu, CU_STREAM_WAIT_VALUE_GEQ));
    OK(cuStreamSynchronize(a));
    /* EQ, AND, NOR open at once when satisfied. */
    OK(cuStreamWaitValue32(a, d, 5, CU_STREAM_WAIT_VALUE_EQ));
    OK(cuStreamWaitValue32(a, d, 4, CU_STREAM_WAIT_VALUE_AND));
    OK(cuStreamWaitValue32(a, d, 2, CU_STREAM_WAIT_VALUE_NOR));
    OK(cuStreamSynchronize(a));
    /* EQ that is not satisfied holds. */
    atomic_store(&ran, 0);
    OK(cuStreamWaitValue32(a, d, 7, CU_STREAM_WAIT_VALUE_EQ));
    OK(cuLaunchHostFunc(a, mark_ran, NULL));
    emuWriteValue32(flag, 8);
    test_sleep_ms(10);
    CHECK(atomic_load(&ran) == 0);
    emuWriteValue32(flag, 7);
    OK(cuStreamSynchronize(a));
    CHECK(atomic_load(&ran) == 1);

    /* Device memory works as a gate too; foreign memory does not. */
    CUdeviceptr dm;
    OK(cuMemAlloc(&dm, 4096));
    OK(cuMemsetD32(dm, 0, 1024));
    OK(cuStreamWriteValue32(b, dm + 8, 9, 0));
    OK(cuStreamWaitValue32(a, dm + 8, 9, CU_STREAM_WAIT_VALUE_GEQ));
    OK(cuStreamSynchronize(a));
    static uint32_t foreign;
    CHECK_CU(cuStreamWaitValue32(a, (CUdeviceptr)(uintptr_t)&foreign, 1, 0),
             CUDA_ERROR_INVALID_VALUE);
    CHECK_CU(cuStreamWriteValue32(a, dm + 2, 1, 0), CUDA_ERROR_INVALID_VALUE);   /* misaligned */
    CHECK_CU(cuStreamWaitValue32(a, dm + 4096, 1, 0), CUDA_ERROR_INVALID_VALUE); /* past the end */

    OK(cuStreamDestroy(a));
    OK(cuStreamDestroy(b));
    OK(cuMemFree(dm));
    OK(cuMemFreeHost(flag));
    OK(cuMemFreeHost(hold));
    printf("PASS\n");
    return 0;
}
