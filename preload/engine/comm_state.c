/* Per-communicator state and its resources: the registry (creation order, lookup), the event
 * pool, the release of the GPU resources and of the models, the summary line. These are the
 * primitives; when they are used (setup, retire, exit) is decided by comm_life.c alone.
 * States are never freed (the poller walks the list without a global lock); a destroyed
 * communicator's heavy parts are released and its state stays as a small tombstone. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/comm_state.h"
#include "engine/route.h"
#include "real_libs/cuda_driver.h"
#include "process/init.h"
#include "thread_local.h"
#include "debug_lines/log_line.h"
#include "real_libs/nccl_symbols.h"
#include "config/process_config.h"

static _Atomic(prophet_comm_t *) prophet_comms;
static _Atomic uint64_t prophet_next_comm_id;
static PROPHET_TLS prophet_comm_t *prophet_comm_cache;

prophet_comm_t *prophet_comm_list(void)
{
    return atomic_load_explicit(&prophet_comms, memory_order_acquire);
}

prophet_comm_t *prophet_comm_find(ncclComm_t handle)
{
    prophet_comm_t *c = prophet_comm_cache;

    if (!handle)
        return NULL;
    if (c && c->handle == handle && atomic_load_explicit(&c->alive, memory_order_relaxed))
        return c;
    for (c = prophet_comm_list(); c; c = c->next_all) {
        if (c->handle == handle && atomic_load_explicit(&c->alive, memory_order_relaxed)) {
            prophet_comm_cache = c;
            return c;
        }
    }
    return NULL;
}

/* NCCL_COMM_BLOCKING=0 makes communicators without an explicit config non-blocking. */
static int prophet_default_blocking(void)
{
    const char *v = getenv("NCCL_COMM_BLOCKING");
    return !(v && v[0] == '0' && v[1] == '\0');
}

void prophet_comm_created(ncclComm_t handle, int rank, int nranks, const ncclConfig_t *config,
                          int inherit_blocking_from_parent, ncclComm_t parent)
{
    prophet_comm_t *c, *head, *p;

    if (!handle || !prophet_active())
        return;
    c = calloc(1, sizeof(*c));
    if (!c) {
        prophet_msg(PROPHET_LOG_WARN, "out of memory: communicator passes through");
        return;
    }
    pthread_mutex_init(&c->lock, NULL);
    c->handle = handle;
    c->rank = rank;
    c->nranks = nranks;
    c->blocking = prophet_default_blocking();
    if (inherit_blocking_from_parent && (p = prophet_comm_find(parent)) != NULL)
        c->blocking = p->blocking;
    if (config && config->blocking != NCCL_CONFIG_UNDEF_INT)
        c->blocking = config->blocking != 0;
    c->passthrough = !c->blocking && prophet_cfg.gate == PROPHET_GATE_HOLD;
    c->order.last_index = UINT32_MAX;
    c->loop.in_force = c->loop.iter_cand = PROPHET_CAND_NONE;
    c->loop.kept_cand =
        PROPHET_CAND_PASSTHROUGH; /* the incumbent before any choice (iteration_samples.c) */
    c->id = atomic_fetch_add(&prophet_next_comm_id, 1);
    atomic_store(&c->alive, 1);
    head = atomic_load(&prophet_comms);
    do {
        c->next_all = head;
    } while (!atomic_compare_exchange_weak(&prophet_comms, &head, c));
    prophet_msg(PROPHET_LOG_TRACE, "comm %lu created (rank %d of %d, %s)", (unsigned long)c->id,
                rank, nranks, c->blocking ? "blocking" : "non-blocking: passthrough");
}

void prophet_comm_fail(prophet_comm_t *c, const char *what, CUresult rc)
{
    int level;

    if (c->setup <= 0) {
        if (!c->passthrough)
            prophet_msg(PROPHET_LOG_WARN,
                        "comm %lu: %s failed (%s); this communicator passes through from now on",
                        (unsigned long)c->id, what, prophet_cuda_errstr(rc));
        c->passthrough = 1;
        return;
    }
    /* One rank alone must never change the NCCL calls it issues (I1): the caller works
     * around this failure here, with the same calls in the same groups. */
    level = c->local_faults++ ? PROPHET_LOG_TRACE : PROPHET_LOG_WARN;
    prophet_msg(level,
                "comm %lu: %s failed (%s); handled on this rank, the NCCL calls stay the same",
                (unsigned long)c->id, what, prophet_cuda_errstr(rc));
}

void prophet_comm_error(prophet_comm_t *c, const char *what, ncclResult_t err)
{
    if (c->error == ncclSuccess)
        prophet_msg(PROPHET_LOG_WARN,
                    "comm %lu: %s failed on this rank and cannot be worked around without changing "
                    "its NCCL calls; every later call on this communicator returns '%s'",
                    (unsigned long)c->id, what, prophet_nccl_errstr(err));
    c->error = err;
    c->passthrough = 1;
}

CUevent prophet_comm_event_get(prophet_comm_t *c)
{
    CUevent e = NULL;
    CUresult rc;

    if (c->gpu.event_pool_n > 0)
        return c->gpu.event_pool[--c->gpu.event_pool_n];
    rc = prophet_cu.EventCreate(&e, CU_EVENT_DEFAULT);
    if (rc != CUDA_SUCCESS) {
        prophet_comm_fail(c, "cuEventCreate", rc);
        return NULL;
    }
    return e;
}

void prophet_comm_event_put(prophet_comm_t *c, CUevent e)
{
    if (!e)
        return;
    if (c->gpu.event_pool_n == c->gpu.event_pool_cap) {
        uint32_t cap = c->gpu.event_pool_cap ? 2 * c->gpu.event_pool_cap : 64;
        CUevent *p = realloc(c->gpu.event_pool, cap * sizeof(*p));
        if (!p) {
            prophet_cu.EventDestroy(e);
            return;
        }
        c->gpu.event_pool = p;
        c->gpu.event_pool_cap = cap;
    }
    c->gpu.event_pool[c->gpu.event_pool_n++] = e;
}

#define PROPHET_SPARE_RECORDS 256

prophet_inflight_t *prophet_comm_record_get(prophet_comm_t *c, uint32_t n)
{
    prophet_inflight_t *f = c->blocks.spare;

    if (n == 1 && f) {
        c->blocks.spare = f->next;
        c->blocks.spare_n--;
        return f;
    }
    return malloc(sizeof(*f) + n * sizeof(f->m[0]));
}

void prophet_comm_record_put(prophet_comm_t *c, prophet_inflight_t *f)
{
    if (!f)
        return;
    if (f->n != 1 || c->blocks.spare_n >= PROPHET_SPARE_RECORDS) {
        free(f);
        return;
    }
    f->next = c->blocks.spare;
    c->blocks.spare = f;
    c->blocks.spare_n++;
}

/* The all-reduces that went straight to NCCL, per reason (route.c): " pass_capture=3
 * pass_user_group=10", the non-zero ones only, each a key=value of its own. */
static void prophet_comm_pass_reasons(const prophet_stats_t *s, char *out, size_t len)
{
    size_t n = 0;

    out[0] = '\0';
    for (int w = 0; w < PROPHET_WHY_COUNT; w++) {
        int got;
        if (!s->route[w] || prophet_route_why_verdict(w) != PROPHET_VERDICT_PASS)
            continue;
        got = snprintf(out + n, len - n, " pass_%s=%lu", prophet_route_why_name(w),
                       (unsigned long)s->route[w]);
        if (got < 0 || (size_t)got >= len - n) {
            out[n] = '\0';
            break;
        }
        n += (size_t)got;
    }
}

void prophet_comm_summary(prophet_comm_t *c, double poller_busy_hz)
{
    const prophet_stats_t *s = &c->stats;
    char reasons[512];

    if (c->summary_done || c->setup == 0)
        return;
    c->summary_done = 1;
    prophet_comm_pass_reasons(s, reasons, sizeof(reasons));
    prophet_msg(PROPHET_LOG_INFO,
                "summary comm %lu rank %d/%d: calls=%lu scheduled=%lu passthrough=%lu blocks=%lu "
                "blocks>1=%lu mean_members=%.2f plans=%lu plan_rejects=%lu stall_warnings=%lu "
                "observed=%lu poller_busy_hz=%.0f extras=%lu iters=%lu trial_iters=%lu%s",
                (unsigned long)c->id, c->rank, c->nranks, (unsigned long)s->calls,
                (unsigned long)s->scheduled, (unsigned long)s->passthrough,
                (unsigned long)s->blocks, (unsigned long)s->blocks_multi,
                s->blocks ? (double)s->block_members / (double)s->blocks : 0.0,
                (unsigned long)s->plans, (unsigned long)s->plan_rejects,
                (unsigned long)s->stall_warnings, (unsigned long)s->observed, poller_busy_hz,
                (unsigned long)s->extras, (unsigned long)s->iters, (unsigned long)s->trial_iters,
                reasons);
}

/* A destroyed comm: once its last block completed, X and the pooled events go. The host memory
 * of the gate stays (callers' streams may still hold waits that read it). */
void prophet_comm_gpu_release(prophet_comm_t *c)
{
    if (c->blocks.inflight_head || !c->gpu.internal_stream)
        return;
    prophet_cu.StreamSynchronize(c->gpu.internal_stream);
    prophet_cu.StreamDestroy(c->gpu.internal_stream);
    c->gpu.internal_stream = NULL;
    while (c->gpu.event_pool_n)
        prophet_cu.EventDestroy(c->gpu.event_pool[--c->gpu.event_pool_n]);
    for (; c->loop.mark_n; c->loop.mark_n--) { /* the closed loop's marks not yet timed */
        prophet_loop_mark_t *mk = &c->loop.marks[c->loop.mark_head];
        if (mk->ev)
            prophet_cu.EventDestroy(mk->ev);
        c->loop.mark_head = (c->loop.mark_head + 1) % PROPHET_LOOP_MARKS;
    }
    while (c->blocks.spare) {
        prophet_inflight_t *f = c->blocks.spare;
        c->blocks.spare = f->next;
        free(f);
    }
    c->blocks.spare_n = 0;
}

/* The learner, engine, net model and signature sequence of a retired comm. */
void prophet_comm_free_models(prophet_comm_t *c)
{
    prophet_learner_free(c->models.learner);
    prophet_engine_free(c->models.engine);
    prophet_netmodel_free(c->models.net);
    c->models.learner = NULL;
    c->models.engine = NULL;
    c->models.net = NULL;
    free(c->order.seq);
    c->order.seq = NULL;
    prophet_closed_loop_free(c->loop.cl);
    c->loop.cl = NULL;
}
