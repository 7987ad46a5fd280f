/* The holding engine's reset in a forked child (preload/holding/hold_tables.c, hold_atfork_child):
 * the parent's engine has a record, a stream, a communicator, open blocks, a taint and is armed,
 * and another thread holds the engine lock when the parent forks. The child's engine must be
 * empty and marked forked, disarmed, and its lock free (made anew: the copy was held). Links
 * hold_tables.c alone; the driver table is never called. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "holding/hold_tables.h"
#include "real_libs/cuda_driver.h"

prophet_cuda_api_t prophet_cu; /* hold_tables.c's driver calls: none is made here */

static int bad;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL: %s (line %d)\n", #cond, __LINE__);                              \
            bad = 1;                                                                               \
        }                                                                                          \
    } while (0)

static pthread_mutex_t held_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t held_cv = PTHREAD_COND_INITIALIZER;
static int lock_held, may_unlock;

/* Holds the engine lock until the parent has forked. */
static void *holder(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&prophet_hold_engine.lock);
    pthread_mutex_lock(&held_mu);
    lock_held = 1;
    pthread_cond_broadcast(&held_cv);
    while (!may_unlock)
        pthread_cond_wait(&held_cv, &held_mu);
    pthread_mutex_unlock(&held_mu);
    pthread_mutex_unlock(&prophet_hold_engine.lock);
    return NULL;
}

/* The child's engine: empty, forked, disarmed, its lock free. */
static int child_checks(void)
{
    int empty = 1;

    for (int b = 0; b < HOLD_STREAM_BUCKETS; b++)
        empty &= prophet_hold_engine.streams[b] == NULL;
    for (int b = 0; b < HOLD_EVENT_BUCKETS; b++)
        empty &= prophet_hold_engine.recs[b] == NULL;
    for (int b = 0; b < HOLD_COMM_BUCKETS; b++)
        empty &= prophet_hold_engine.comms[b] == NULL;
    CHECK(empty);
    CHECK(prophet_hold_engine.forked == 1);
    CHECK(prophet_hold_engine.comm_all == NULL && prophet_hold_engine.virt_head == NULL);
    CHECK(prophet_hold_engine.nopen == 0 && prophet_hold_engine.nlive_recs == 0 &&
          prophet_hold_engine.nlive_streams == 0 && prophet_hold_engine.ntainted == 0);
    CHECK(atomic_load(&prophet_hold_engine.any_taint) == 0 &&
          atomic_load(&prophet_hold_engine.dep_comm) == NULL);
    CHECK(!prophet_hold_armed());
    CHECK(pthread_mutex_trylock(&prophet_hold_engine.lock) == 0); /* a copy would be held */
    CHECK(prophet_hold_skip());
    return bad;
}

int main(void)
{
    static char comm_storage[64];
    prophet_comm_t *c = (prophet_comm_t *)(void *)comm_storage; /* only its address is used */
    hold_stream_t *h;
    pthread_t th;
    int status = 0;
    pid_t pid;

    prophet_hold_fork_guard();
    HOLD_LOCK();
    CHECK(prophet_hold_rec_get((CUevent)(uintptr_t)0x1000) != NULL);
    CHECK((h = prophet_hold_stream_new((CUstream)(uintptr_t)0x2000, (CUstream)(uintptr_t)0x2000, 0,
                                       0)) != NULL);
    CHECK(prophet_hold_comm(c) != NULL);
    if (h)
        HOLD_STREAM_CHANGE(h, prophet_hold_dep_add(&h->taint, c, 1));
    prophet_hold_engine.nopen = 1;
    prophet_hold_rearm();
    HOLD_UNLOCK();
    CHECK(prophet_hold_armed() && atomic_load(&prophet_hold_engine.any_taint) == 1);

    pthread_create(&th, NULL, holder, NULL);
    pthread_mutex_lock(&held_mu);
    while (!lock_held)
        pthread_cond_wait(&held_cv, &held_mu);
    pthread_mutex_unlock(&held_mu);
    pid = fork();
    if (pid == 0) {
        alarm(10);
        _exit(child_checks());
    }
    pthread_mutex_lock(&held_mu);
    may_unlock = 1;
    pthread_cond_broadcast(&held_cv);
    pthread_mutex_unlock(&held_mu);
    pthread_join(th, NULL);
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    /* the parent's engine is untouched */
    CHECK(prophet_hold_engine.forked == 0 && prophet_hold_engine.nopen == 1 &&
          prophet_hold_engine.nlive_recs == 1 && prophet_hold_rec_find((CUevent)(uintptr_t)0x1000));
    if (!bad)
        printf("fork reset: the child's engine empty, forked, disarmed, its lock free\n");
    return bad;
}
