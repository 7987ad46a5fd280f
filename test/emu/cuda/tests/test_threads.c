/* Many threads share the driver: streams, events and gates used concurrently (a TSan target).
 * A ring of streams: each stream waits on the previous one's gate and opens its own. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "emu_test.h"

#define T 6
#define ROUNDS 200

static CUcontext g_ctx;
static uint32_t *flags; /* device-mapped host memory, one gate per thread */
static CUevent evs[T];
static atomic_int sum;

static void add_one(void *arg)
{
    (void)arg;
    atomic_fetch_add(&sum, 1);
}

struct targ {
    int id;
    CUstream s;
};

static void *worker(void *p)
{
    struct targ *a = p;
    OK(cuCtxSetCurrent(g_ctx));
    CUdeviceptr mine, prev;
    OK(cuMemHostGetDevicePointer(&mine, &flags[a->id], 0));
    OK(cuMemHostGetDevicePointer(&prev, &flags[(a->id + T - 1) % T], 0));
    for (uint32_t r = 1; r <= ROUNDS; r++) {
        if (a->id != 0 || r > 1)
            OK(cuStreamWaitValue32(a->s, a->id == 0 ? prev : prev, a->id == 0 ? r - 1 : r,
                                   CU_STREAM_WAIT_VALUE_GEQ));
        OK(cuLaunchHostFunc(a->s, add_one, NULL));
        OK(cuEventRecord(evs[a->id], a->s));
        OK(cuStreamWriteValue32(a->s, mine, r, 0));
        (void)cuEventQuery(evs[(a->id + 1) % T]);
        (void)cuStreamQuery(a->s);
    }
    OK(cuStreamSynchronize(a->s));
    return NULL;
}

int main(void)
{
    g_ctx = test_setup();
    OK(cuMemHostAlloc((void **)&flags, T * sizeof(uint32_t), CU_MEMHOSTALLOC_DEVICEMAP));
    for (int i = 0; i < T; i++)
        __atomic_store_n(&flags[i], 0, __ATOMIC_RELEASE);
    pthread_t th[T];
    struct targ args[T];
    for (int i = 0; i < T; i++) {
        args[i].id = i;
        OK(cuStreamCreate(&args[i].s, CU_STREAM_NON_BLOCKING));
        OK(cuEventCreate(&evs[i], CU_EVENT_DISABLE_TIMING));
    }
    for (int i = 0; i < T; i++)
        CHECK(pthread_create(&th[i], NULL, worker, &args[i]) == 0);
    for (int i = 0; i < T; i++)
        pthread_join(th[i], NULL);
    OK(cuCtxSynchronize());
    CHECK(atomic_load(&sum) == T * ROUNDS);
    for (int i = 0; i < T; i++) {
        CHECK(__atomic_load_n(&flags[i], __ATOMIC_ACQUIRE) == ROUNDS);
        OK(cuEventDestroy(evs[i]));
        OK(cuStreamDestroy(args[i].s));
    }
    OK(cuMemFreeHost(flags));
    printf("PASS\n");
    return 0;
}
