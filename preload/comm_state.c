/* Per-communicator state: identity (creation order, rank), the internal stream X, the gate word,
 * the learner, net model and engine, the held block and the launched blocks awaiting timing.
 * States are never freed (the poller walks the list without a global lock); a destroyed
 * communicator's heavy parts are released and its state stays as a small tombstone. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "prophet_preload.h"

#define PROPHET_HOSTMEM_BYTES (256 + PROPHET_PLAN_WIRE_BYTES)

static _Atomic(prophet_comm_t *) prophet_comms;
static _Atomic uint64_t prophet_next_comm_id;
static _Thread_local prophet_comm_t *prophet_comm_cache;

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
    c->passthrough = !c->blocking && prophet_cfg.gate == PROPHET_GATE_BLOCK;
    c->last_index = UINT32_MAX;
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
    if (!c->passthrough)
        prophet_msg(PROPHET_LOG_WARN,
                    "comm %lu: %s failed (%s); this communicator passes through from now on",
                    (unsigned long)c->id, what, prophet_cuda_errstr(rc));
    c->passthrough = 1;
}

static int prophet_comm_setup_cuda(prophet_comm_t *c)
{
    void *mem = NULL;
    CUresult rc;
    const char *what;

#define PROPHET_TRY(call, name)                                                                    \
    do {                                                                                           \
        what = name;                                                                               \
        if ((rc = (call)) != CUDA_SUCCESS)                                                         \
            goto fail;                                                                             \
    } while (0)
    PROPHET_TRY(prophet_cu.CtxGetCurrent(&c->ctx), "cuCtxGetCurrent");
    what = "a current CUDA context";
    rc = CUDA_ERROR_INVALID_CONTEXT;
    if (!c->ctx)
        goto fail;
    PROPHET_TRY(prophet_cu.StreamCreate(&c->x, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    PROPHET_TRY(prophet_cu.MemHostAlloc(&mem, PROPHET_HOSTMEM_BYTES,
                                        CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE),
                "cuMemHostAlloc");
    memset(mem, 0, PROPHET_HOSTMEM_BYTES);
    c->gate_host = mem;
    c->plan_host = (char *)mem + 256;
    PROPHET_TRY(prophet_cu.MemHostGetDevicePointer(&c->gate_dev, mem, 0),
                "cuMemHostGetDevicePointer");
    c->plan_dev = c->gate_dev + 256;
    PROPHET_TRY(prophet_cu.EventCreate(&c->plan_event, CU_EVENT_DEFAULT), "cuEventCreate");
    PROPHET_TRY(prophet_cu.EventCreate(&c->base_event, CU_EVENT_DEFAULT), "cuEventCreate");
    /* X is idle: the base event fires at once, so base_us is its host instant */
    c->base_us = prophet_now_us();
    PROPHET_TRY(prophet_cu.EventRecord(c->base_event, c->x), "cuEventRecord");
    return 0;
fail:
    prophet_comm_fail(c, what, rc);
    return -1;
#undef PROPHET_TRY
}

int prophet_comm_setup(prophet_comm_t *c)
{
    prophet_learner_opts_t lo = {.learn_iters = prophet_cfg.learn_iters,
                                 .max_calls = PROPHET_MAX_CALLS};
    prophet_net_t net0 = {.alpha_us = 20.0, .bandwidth_Bps = 1.25e9, .source = PROPHET_NET_DEFAULT};

    if (c->setup)
        return c->setup > 0 ? 0 : -1;
    c->setup = -1;
    if (prophet_init_runtime() != 0) {
        c->passthrough = 1;
        return -1;
    }
    if (c->rank < 0 && prophet_nccl.CommUserRank)
        prophet_nccl.CommUserRank(c->handle, &c->rank);
    if (c->nranks < 0 && prophet_nccl.CommCount)
        prophet_nccl.CommCount(c->handle, &c->nranks);
    if (prophet_cfg.bandwidth_Bps > 0 || prophet_cfg.alpha_us >= 0) {
        if (prophet_cfg.bandwidth_Bps > 0)
            net0.bandwidth_Bps = prophet_cfg.bandwidth_Bps;
        if (prophet_cfg.alpha_us >= 0)
            net0.alpha_us = prophet_cfg.alpha_us;
        net0.source = PROPHET_NET_FIXED;
    }
    c->learner = prophet_learner_new(&lo);
    c->net = prophet_netmodel_new(&net0);
    c->engine = prophet_engine_new();
    c->seq = calloc(PROPHET_MAX_CALLS, sizeof(*c->seq));
    if (!c->learner || !c->net || !c->engine || !c->seq) {
        prophet_msg(PROPHET_LOG_WARN, "comm %lu: out of memory; passthrough", (unsigned long)c->id);
        c->passthrough = 1;
        return -1;
    }
    if (prophet_comm_setup_cuda(c) != 0)
        return -1;
    /* block mode: the first agreement waits for measured readiness (schedule.c) */
    c->next_agree_iter =
        prophet_cfg.gate == PROPHET_GATE_BLOCK ? UINT64_MAX : prophet_cfg.learn_iters;
    c->setup = 1;
    prophet_logb_open(c);
    return 0;
}

CUevent prophet_comm_event_get(prophet_comm_t *c)
{
    CUevent e = NULL;
    CUresult rc;

    if (c->event_pool_n > 0)
        return c->event_pool[--c->event_pool_n];
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
    if (c->event_pool_n == c->event_pool_cap) {
        uint32_t cap = c->event_pool_cap ? 2 * c->event_pool_cap : 64;
        CUevent *p = realloc(c->event_pool, cap * sizeof(*p));
        if (!p) {
            prophet_cu.EventDestroy(e);
            return;
        }
        c->event_pool = p;
        c->event_pool_cap = cap;
    }
    c->event_pool[c->event_pool_n++] = e;
}

void prophet_comm_summary(prophet_comm_t *c)
{
    const prophet_stats_t *s = &c->stats;

    if (c->summary_done || c->setup == 0)
        return;
    c->summary_done = 1;
    prophet_msg(PROPHET_LOG_INFO,
                "summary comm %lu rank %d/%d: calls=%lu scheduled=%lu passthrough=%lu blocks=%lu "
                "blocks>1=%lu mean_members=%.2f plans=%lu plan_rejects=%lu stall_warnings=%lu",
                (unsigned long)c->id, c->rank, c->nranks, (unsigned long)s->calls,
                (unsigned long)s->scheduled, (unsigned long)s->passthrough,
                (unsigned long)s->blocks, (unsigned long)s->blocks_multi,
                s->blocks ? (double)s->block_members / (double)s->blocks : 0.0,
                (unsigned long)s->plans, (unsigned long)s->plan_rejects,
                (unsigned long)s->stall_warnings);
}

void prophet_comm_retire(prophet_comm_t *c, int abort)
{
    pthread_mutex_lock(&c->lock);
    if (!atomic_load(&c->alive))
        goto out;
    if (!abort) {
        prophet_release_pending(c);
        /* destroy/finalize is a host-blocking point anyway: let X finish before NCCL tears the
         * comm down (X waits only for ready events of calls already made) */
        if (c->x)
            prophet_cu.StreamSynchronize(c->x);
    } else {
        /* Abort: held calls were never launched and have no gate; they are dropped with the comm */
        for (uint32_t i = 0; i < c->pending.n; i++)
            prophet_comm_event_put(c, c->pending.m[i].ready);
        c->pending.n = 0;
    }
    atomic_store(&c->alive, 0);
    prophet_comm_summary(c);
    prophet_logb_close(c);
    /* the learner, engine and net model are not needed any more; X, the events and the
     * host memory are released by the poller once every launched block has completed */
    prophet_learner_free(c->learner);
    prophet_engine_free(c->engine);
    prophet_netmodel_free(c->net);
    c->learner = NULL;
    c->engine = NULL;
    c->net = NULL;
    free(c->seq);
    c->seq = NULL;
out:
    pthread_mutex_unlock(&c->lock);
}

const char *prophet_dtype_name(ncclDataType_t t)
{
    static const char *const names[ncclNumTypes] = {"int8",    "uint8",    "int32",   "uint32",
                                                    "int64",   "uint64",   "float16", "float32",
                                                    "float64", "bfloat16", "fp8e4m3", "fp8e5m2"};
    return (unsigned)t < ncclNumTypes ? names[t] : "unknown";
}

size_t prophet_dtype_size(ncclDataType_t t)
{
    static const unsigned char sizes[ncclNumTypes] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
    return (unsigned)t < ncclNumTypes ? sizes[t] : 0;
}
