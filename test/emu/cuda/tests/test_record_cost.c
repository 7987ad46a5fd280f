/* What an event record costs the caller (issue 12 item 4; README "Event records"): on a stream
 * with nothing queued the record fires in the caller, at once, and the caller spends at least
 * EMU_CUDA_RECORD_NS (3000 here, set by CMake) with timing, EMU_CUDA_RECORD_NOTIMING_NS (700)
 * without: never cheaper than the real driver figure it stands for. Behind queued work a record
 * still waits for that work, in stream order. */
#include <stdatomic.h>
#include <stdint.h>

#include "emu_test.h"

#define N 300

/* The kernel's function: runs until the host has seen the record pending, so that "queued behind
 * a running kernel" does not depend on the host reaching its query within the kernel's 20 ms (a
 * host thread preempted that long on a loaded machine saw the record fired). */
static void run_until_released(void *arg)
{
    atomic_int *released = arg;
    while (!atomic_load(released))
        test_sleep_ms(1);
}

/* The least host time of N records of an event created with flags, on an idle stream; each
 * record must have fired by the time the call returns. */
static uint64_t least_idle_record_ns(CUstream s, unsigned flags)
{
    uint64_t least = UINT64_MAX;
    for (int i = 0; i < N; i++) {
        CUevent e;
        OK(cuEventCreate(&e, flags));
        OK(cuStreamSynchronize(s));
        uint64_t t0 = emuNowNs();
        OK(cuEventRecord(e, s));
        uint64_t t1 = emuNowNs();
        CHECK_CU(cuEventQuery(e), CUDA_SUCCESS); /* fired in the call, not on the stream thread */
        if (!(flags & CU_EVENT_DISABLE_TIMING)) {
            uint64_t ts = 0;
            OK(emuEventTimestampNs(e, &ts));
            CHECK(ts >= t0 && ts <= t1);
        }
        if (t1 - t0 < least)
            least = t1 - t0;
        OK(cuEventDestroy(e));
    }
    return least;
}

int main(void)
{
    test_setup();
    CUstream s;
    CUevent e;
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));

    uint64_t timing = least_idle_record_ns(s, 0);
    uint64_t notiming = least_idle_record_ns(s, CU_EVENT_DISABLE_TIMING);
    printf("idle-stream record, least of %d: %llu ns with timing, %llu ns without\n", N,
           (unsigned long long)timing, (unsigned long long)notiming);
    CHECK(timing >= 3000);
    CHECK(notiming >= 700);

    /* behind a running kernel: queued, fires after it */
    OK(cuEventCreate(&e, 0));
    atomic_int released = 0;
    OK(emuLaunchKernel(s, 20000000ull, run_until_released, &released));
    OK(cuEventRecord(e, s));
    CHECK_CU(cuEventQuery(e), CUDA_ERROR_NOT_READY);
    atomic_store(&released, 1);
    OK(cuEventSynchronize(e));
    CHECK(emuStreamOpsPending(s) == 0);
    OK(cuEventDestroy(e));
    OK(cuStreamDestroy(s));
    printf("ok\n");
    return 0;
}
