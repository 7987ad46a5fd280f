/* Host functions run on the stream's thread in stream order, interleaved correctly with other
 * operations; the default streams (0, legacy, per-thread) work as streams; several threads
 * enqueue at once. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "emu_test.h"

#define N 2000

struct seq {
    int next;
    int bad;
    pthread_t thr;
    int thr_set;
    int thr_changed;
};

struct item {
    struct seq *seq;
    int idx;
};

static void in_order(void *arg)
{
    struct item *it = arg;
    struct seq *s = it->seq;
    pthread_t self = pthread_self();
    if (!s->thr_set) {
        s->thr = self;
        s->thr_set = 1;
    } else if (!pthread_equal(s->thr, self)) {
        s->thr_changed = 1;
    }
    if (it->idx != s->next)
        s->bad++;
    s->next = it->idx + 1;
}

static void enqueue_and_check(CUstream st)
{
    static __thread struct item items[N];
    struct seq s;
    memset(&s, 0, sizeof(s));
    for (int i = 0; i < N; i++) {
        items[i].seq = &s;
        items[i].idx = i;
        OK(cuLaunchHostFunc(st, in_order, &items[i]));
    }
    OK(cuStreamSynchronize(st));
    CHECK(s.next == N && s.bad == 0 && !s.thr_changed);
    CHECK(!pthread_equal(s.thr, pthread_self()));
}

static CUcontext g_ctx;
static void *worker(void *arg)
{
    (void)arg;
    OK(cuCtxSetCurrent(g_ctx));
    CUstream st;
    OK(cuStreamCreateWithPriority(&st, CU_STREAM_NON_BLOCKING, -1));
    enqueue_and_check(st);
    OK(cuStreamDestroy(st));
    return NULL;
}

static void copy_done(void *arg)
{
    /* the copy queued before this host func is complete */
    unsigned char *buf = arg;
    for (int i = 0; i < 256; i++)
        CHECK(buf[i] == 0xab);
}

int main(void)
{
    g_ctx = test_setup();
    CUstream st;
    OK(cuStreamCreate(&st, 0));
    enqueue_and_check(st);
    CHECK(emuStreamOpsExecuted(st) == N);
    enqueue_and_check(NULL);
    enqueue_and_check(CU_STREAM_LEGACY);
    enqueue_and_check(CU_STREAM_PER_THREAD);

    /* ordering with a memset + copy */
    CUdeviceptr dev;
    unsigned char *host;
    OK(cuMemAlloc(&dev, 256));
    OK(cuMemHostAlloc((void **)&host, 256, 0));
    memset(host, 0, 256);
    OK(cuMemsetD8Async(dev, 0xab, 256, st));
    OK(cuMemcpyDtoHAsync(host, dev, 256, st));
    OK(cuLaunchHostFunc(st, copy_done, host));
    OK(cuStreamSynchronize(st));

    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        CHECK(pthread_create(&t[i], NULL, worker, NULL) == 0);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);

    OK(cuCtxSynchronize());
    OK(cuStreamDestroy(st));
    OK(cuMemFree(dev));
    OK(cuMemFreeHost(host));
    printf("PASS\n");
    return 0;
}
