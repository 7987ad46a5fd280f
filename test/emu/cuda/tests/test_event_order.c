/* Events order streams: B waits on an event of A, so B's op runs after A's op. A re-recorded
 * event moves; a wait refers to the record that was latest when it was issued. */
#include <stdatomic.h>
#include <stdint.h>

#include "emu_test.h"

static atomic_int counter;
struct stamp {
    int order;
    uint64_t ns;
};

static void take_stamp(void *arg)
{
    struct stamp *s = arg;
    s->order = atomic_fetch_add(&counter, 1);
    s->ns = emuNowNs();
}

int main(void)
{
    test_setup();
    CUstream a, b;
    CUevent ev;
    OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    OK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    OK(cuEventCreate(&ev, CU_EVENT_DEFAULT));

    /* never recorded: complete, and waiting on it is a no-op */
    OK(cuEventQuery(ev));
    OK(cuEventSynchronize(ev));
    OK(cuStreamWaitEvent(b, ev, 0));
    CHECK(emuStreamOpsPending(b) == 0);

    struct stamp sa = {0}, sb = {0};
    uint32_t *gate = test_gate_new();
    test_gate_close(a, gate);
    /* the kernel ends at least 30 ms after take_stamp returned (emu_cuda.h), so the event recorded
     * after it fires, and b's host function stamps, at least 30 ms after sa.ns: a bound the model
     * guarantees however long the stamp itself takes (TSan) */
    OK(emuLaunchKernel(a, 30000000ull, take_stamp, &sa));
    OK(cuEventRecord(ev, a));
    OK(cuStreamWaitEvent(b, ev, 0));
    OK(cuLaunchHostFunc(b, take_stamp, &sb));
    test_sleep_ms(5);
    CHECK_CU(cuEventQuery(ev), CUDA_ERROR_NOT_READY);
    CHECK(emuStreamOpsPending(b) == 2);
    test_gate_open(gate);
    OK(cuEventSynchronize(ev));
    OK(cuEventQuery(ev));
    OK(cuStreamSynchronize(b));
    CHECK(sa.order == 0 && sb.order == 1);
    CHECK(sb.ns >= sa.ns + 30000000ull);
    uint64_t ev_ns;
    OK(emuEventTimestampNs(ev, &ev_ns));
    CHECK(ev_ns >= sa.ns + 30000000ull && ev_ns <= sb.ns);

    /* Wait refers to the record current at wait time: record on a (slow), wait on b, then
     * re-record on an idle stream c. b must still wait for a's slow kernel. */
    CUstream c;
    OK(cuStreamCreate(&c, CU_STREAM_NON_BLOCKING));
    struct stamp s1 = {0}, s2 = {0};
    atomic_store(&counter, 0);
    OK(emuLaunchKernel(a, 30000000ull, NULL, NULL));
    OK(cuLaunchHostFunc(a, take_stamp, &s1));
    OK(cuEventRecord(ev, a));
    OK(cuStreamWaitEvent(b, ev, 0));
    OK(cuLaunchHostFunc(b, take_stamp, &s2));
    OK(cuEventRecord(ev, c)); /* moves the event; c is idle so it fires at once */
    OK(cuEventSynchronize(ev));
    OK(cuStreamSynchronize(b));
    CHECK(s1.order == 0 && s2.order == 1);
    OK(cuStreamSynchronize(a));

    /* Many streams fan in: d waits on events of 4 streams with staggered kernels. */
    CUstream src[4];
    CUevent evs[4];
    struct stamp st[4], last;
    atomic_store(&counter, 0);
    CUstream d;
    OK(cuStreamCreate(&d, 0));
    for (int i = 0; i < 4; i++) {
        OK(cuStreamCreate(&src[i], CU_STREAM_NON_BLOCKING));
        OK(cuEventCreate(&evs[i], CU_EVENT_DISABLE_TIMING));
        OK(emuLaunchKernel(src[i], (uint64_t)(4 - i) * 5000000ull, NULL, NULL));
        OK(cuLaunchHostFunc(src[i], take_stamp, &st[i]));
        OK(cuEventRecord(evs[i], src[i]));
        OK(cuStreamWaitEvent(d, evs[i], 0));
    }
    OK(cuLaunchHostFunc(d, take_stamp, &last));
    OK(cuStreamSynchronize(d));
    CHECK(last.order == 4);
    for (int i = 0; i < 4; i++) {
        CHECK(st[i].ns <= last.ns);
        OK(cuEventDestroy(evs[i]));
        OK(cuStreamDestroy(src[i]));
    }

    OK(cuEventDestroy(ev));
    OK(cuStreamDestroy(a));
    OK(cuStreamDestroy(b));
    OK(cuStreamDestroy(c));
    OK(cuStreamDestroy(d));
    OK(cuMemFreeHost(gate));
    printf("PASS\n");
    return 0;
}
