/* CUDA_DEVICE_MAX_CONNECTIONS=2: a context's streams share two hardware queues, mapped in creation
 * order (the default stream on queue 0, then a on 1, b on 0, c on 1). A closed gate on stream a
 * holds back work issued after it on c (the same queue), while b's work (the other queue) runs:
 * b is synchronised while the gate is still closed.   test_queues */
#include <stdatomic.h>

#include "emu_test.h"

static atomic_int ran_b, ran_c;

static void mark(void *arg)
{
    atomic_store((atomic_int *)arg, 1);
}

int main(void)
{
    CUstream a, b, c;

    test_setup();
    uint32_t *g = test_gate_new();
    OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    OK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    OK(cuStreamCreate(&c, CU_STREAM_NON_BLOCKING));
    test_gate_close(a, g);
    OK(cuLaunchHostFunc(c, mark, &ran_c));
    OK(cuLaunchHostFunc(b, mark, &ran_b));
    OK(cuStreamSynchronize(b)); /* the other queue: runs while a's gate is closed */
    CHECK(atomic_load(&ran_b) == 1);
    CHECK(atomic_load(&ran_c) == 0);
    CHECK_CU(cuStreamQuery(c), CUDA_ERROR_NOT_READY);
    test_gate_open(g);
    OK(cuStreamSynchronize(c));
    OK(cuStreamSynchronize(a));
    CHECK(atomic_load(&ran_c) == 1);
    printf("queues 2: ok\n");
    return 0;
}
