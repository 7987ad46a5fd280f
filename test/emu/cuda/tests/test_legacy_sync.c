/* Implicit synchronisation of the legacy (NULL) stream with blocking streams, as a real driver
 * does; non-blocking streams are exempt. With EMU_CUDA_LEGACY_SYNC=0 there is none. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "emu_test.h"

static atomic_int ran;
static void mark(void *arg)
{
    (void)arg;
    atomic_fetch_add(&ran, 1);
}

int main(void)
{
    const char *env = getenv("EMU_CUDA_LEGACY_SYNC");
    int sync = !(env && strcmp(env, "0") == 0);
    test_setup();
    CUstream blocking, nonblocking;
    OK(cuStreamCreate(&blocking, CU_STREAM_DEFAULT));
    OK(cuStreamCreate(&nonblocking, CU_STREAM_NON_BLOCKING));
    uint32_t *gate = test_gate_new();

    /* legacy work waits for earlier work on a blocking stream. What ran is checked by
     * synchronising what must not wait (the legacy stream, legacy sync off), never by a sleep
     * that assumes a stream thread ran within it (a loaded host: 20 ms were not enough); a sleep
     * stays only before a check that nothing ran past a closed gate. */
    test_gate_close(blocking, gate);
    OK(cuLaunchHostFunc(NULL, mark, NULL));
    if (sync)
        test_sleep_ms(20);
    else
        OK(cuStreamSynchronize(NULL));
    CHECK(atomic_load(&ran) == (sync ? 0 : 1));
    test_gate_open(gate);
    OK(cuStreamSynchronize(NULL));
    CHECK(atomic_load(&ran) == 1);

    /* blocking-stream work waits for earlier legacy work; non-blocking work does not */
    atomic_store(&ran, 0);
    test_gate_close(NULL, gate);
    OK(cuLaunchHostFunc(blocking, mark, NULL));
    OK(cuStreamSynchronize(nonblocking));
    OK(cuLaunchHostFunc(nonblocking, mark, NULL));
    OK(cuStreamSynchronize(nonblocking));
    if (sync)
        test_sleep_ms(20);
    else
        OK(cuStreamSynchronize(blocking));
    CHECK(atomic_load(&ran) == (sync ? 1 : 2));
    test_gate_open(gate);
    OK(cuStreamSynchronize(blocking));
    CHECK(atomic_load(&ran) == 2);

    /* legacy work does not wait for a non-blocking stream */
    atomic_store(&ran, 0);
    test_gate_close(nonblocking, gate);
    OK(cuLaunchHostFunc(NULL, mark, NULL));
    OK(cuStreamSynchronize(NULL));
    CHECK(atomic_load(&ran) == 1);
    test_gate_open(gate);

    /* internal waits are not counted as the caller's operations */
    CUstream fresh;
    OK(cuStreamCreate(&fresh, CU_STREAM_DEFAULT));
    test_gate_close(NULL, gate);
    OK(cuLaunchHostFunc(fresh, mark, NULL));
    if (sync)
        CHECK(emuStreamOpsPending(fresh) == 1);
    test_gate_open(gate);
    OK(cuStreamSynchronize(fresh));
    CHECK(emuStreamOpsExecuted(fresh) == 1 && emuStreamOpsPending(fresh) == 0);
    OK(cuStreamDestroy(fresh));

    OK(cuCtxSynchronize());
    OK(cuStreamDestroy(blocking));
    OK(cuStreamDestroy(nonblocking));
    OK(cuMemFreeHost(gate));
    printf("PASS (legacy sync %s)\n", sync ? "on" : "off");
    return 0;
}
