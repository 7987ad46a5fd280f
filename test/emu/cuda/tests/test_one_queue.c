/* EMU_CUDA_MAX_CONNECTIONS=1 (or CUDA_DEVICE_MAX_CONNECTIONS=1): every stream's work goes through
 * one queue in issue order, so a closed gate on stream A holds back work issued later on stream B;
 * without it, B runs at once.   test_one_queue one|many */
#include <stdatomic.h>
#include <string.h>

#include "emu_test.h"

static atomic_int ran;

static void mark_ran(void *arg)
{
    (void)arg;
    atomic_store(&ran, 1);
}

int main(int argc, char **argv)
{
    int one = argc > 1 && !strcmp(argv[1], "one");
    CUstream a, b;

    test_setup();
    uint32_t *g = test_gate_new();
    OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    OK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    test_gate_close(a, g);
    OK(cuLaunchHostFunc(b, mark_ran, NULL));
    /* many queues: B's work runs while A's gate is closed, shown by synchronising B (not by
     * assuming B's thread ran within a sleep: a loaded host); one queue: nothing ran past the
     * gate, after a sleep that could only let it */
    if (one)
        test_sleep_ms(30);
    else
        OK(cuStreamSynchronize(b));
    CHECK(atomic_load(&ran) == !one);
    CHECK_CU(cuStreamQuery(b), one ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS);
    test_gate_open(g);
    OK(cuStreamSynchronize(b));
    OK(cuStreamSynchronize(a));
    CHECK(atomic_load(&ran) == 1);
    printf("one_queue %s: ok\n", one ? "one" : "many");
    return 0;
}
