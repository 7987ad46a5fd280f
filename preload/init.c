/* Lazy initialisation (no constructor: loading the library does nothing), fork handling and the
 * exit summary. Two stages: prophet_init() reads the configuration and resolves NCCL (cheap, no
 * threads, no CUDA); prophet_init_runtime() loads the CUDA driver and starts the poller thread when
 * the first communicator is made. PROPHET_DISABLE=1 stops after the first stage. */
#include <pthread.h>
#include <stdlib.h>

#include "prophet_preload.h"

prophet_config_t prophet_cfg = {.debug = PROPHET_LOG_WARN};
_Atomic int prophet_mode;

static pthread_mutex_t prophet_init_lock = PTHREAD_MUTEX_INITIALIZER;
static int prophet_runtime_rc = 1; /* 1 = not tried yet */
static _Atomic int prophet_heavy;  /* threads or CUDA state exist in this process */

/* A child after fork has no poller thread and may hold copies of locks taken mid-operation: if
 * the parent had started anything, the child passes everything through (one INFO line). */
static void prophet_atfork_child(void)
{
    if (atomic_load(&prophet_heavy)) {
        atomic_store(&prophet_mode, PROPHET_MODE_PASSTHROUGH);
        prophet_msg(PROPHET_LOG_INFO, "forked child of an initialised process: passthrough");
    }
}

static void prophet_atexit(void)
{
    if (atomic_load(&prophet_mode) != PROPHET_MODE_ACTIVE)
        return;
    prophet_poller_stop();
    for (prophet_comm_t *c = prophet_comm_list(); c; c = c->next_all) {
        pthread_mutex_lock(&c->lock);
        if (atomic_load(&c->alive))
            prophet_release_pending(c); /* process exit is a program-order point */
        prophet_comm_summary(c);
        prophet_logb_close(c);
        pthread_mutex_unlock(&c->lock);
    }
}

int prophet_init(void)
{
    int mode;

    pthread_mutex_lock(&prophet_init_lock);
    mode = atomic_load(&prophet_mode);
    if (mode != PROPHET_MODE_UNINIT)
        goto out;
    prophet_config_load(&prophet_cfg); /* invalid values: one line each, defaults kept */
    if (prophet_nccl_resolve() != 0) {
        mode = PROPHET_MODE_PASSTHROUGH;
        goto out;
    }
    if (prophet_cfg.disable) {
        mode = PROPHET_MODE_PASSTHROUGH;
        goto out;
    }
    if (!prophet_nccl_supported()) {
        prophet_msg(PROPHET_LOG_WARN, "NCCL version code %d is not supported; passthrough",
                    prophet_nccl_version());
        mode = PROPHET_MODE_PASSTHROUGH;
        goto out;
    }
    pthread_atfork(NULL, NULL, prophet_atfork_child);
    atexit(prophet_atexit);
    mode = PROPHET_MODE_ACTIVE;
    prophet_msg(PROPHET_LOG_INFO, "active: NCCL %d, gate %s, policy %s", prophet_nccl_version(),
                prophet_cfg.gate == PROPHET_GATE_BLOCK ? "block" : "call",
                prophet_policy_name(prophet_cfg.policy_set ? prophet_cfg.policy
                                                           : prophet_policy_default()));
out:
    atomic_store_explicit(&prophet_mode, mode, memory_order_release);
    pthread_mutex_unlock(&prophet_init_lock);
    return mode;
}

int prophet_init_runtime(void)
{
    pthread_mutex_lock(&prophet_init_lock);
    if (prophet_runtime_rc != 1)
        goto out;
    atomic_store(&prophet_heavy, 1);
    prophet_runtime_rc = -1;
    if (prophet_cuda_load() != 0)
        goto out;
    if (prophet_poller_start() != 0) {
        prophet_msg(PROPHET_LOG_WARN, "cannot start the poller thread; passthrough");
        goto out;
    }
    prophet_runtime_rc = 0;
out:
    pthread_mutex_unlock(&prophet_init_lock);
    return prophet_runtime_rc;
}
