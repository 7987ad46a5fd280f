/* Streams: an in-order queue of operations served by one host thread per stream (started at
 * the first operation, joined at destroy), plus stream capture. */
#include <stdlib.h>

#include "emu_internal.h"

struct CUstream_st *emu_stream_alloc(struct CUctx_st *ctx, unsigned flags, int priority,
                                     int is_default)
{
    struct CUstream_st *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->ctx = ctx;
    s->flags = flags;
    s->priority = priority;
    s->is_default = is_default;
    s->id = emu_next_id();
    s->queue = emu_g.nqueues ? (int)(atomic_fetch_add(&ctx->next_queue, 1) % emu_g.nqueues) : 0;
    atomic_init(&s->refs, 1);
    atomic_init(&s->done, 0);
    atomic_init(&s->executed, 0);
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cond, NULL);
    s->cap_status = CU_STREAM_CAPTURE_STATUS_NONE;
    return s;
}

static void emu_stream_free(struct CUstream_st *s)
{
    if (s->cap_graph)
        emu_graph_free(s->cap_graph);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->cond);
    free(s);
}

void emu_stream_put(struct CUstream_st *s)
{
    if (s->is_default)
        return;
    if (atomic_fetch_sub(&s->refs, 1) == 1)
        emu_stream_free(s);
}

CUresult emu_stream_get(CUstream h, struct CUstream_st **out)
{
    CUresult rc = emu_check_init();
    if (rc)
        return rc;
    if (h == NULL || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD) {
        struct CUctx_st *ctx;
        rc = emu_current_ctx(&ctx);
        if (rc)
            return rc;
        *out = ctx->def;
        return CUDA_SUCCESS;
    }
    pthread_mutex_lock(&emu_g.lock);
    if (emu_ptrset_has(&emu_g.streams, h)) {
        atomic_fetch_add(&h->refs, 1);
        *out = h;
    } else {
        rc = CUDA_ERROR_INVALID_HANDLE;
    }
    pthread_mutex_unlock(&emu_g.lock);
    return rc;
}

/* CUDA_DEVICE_MAX_CONNECTIONS=K (EMU_CUDA_MAX_CONNECTIONS=K): the streams share K hardware
 * queues per device (context), stream i of the context (in creation order, its default stream
 * first) on queue i mod K, as the real driver assigns them. A queue dispatches its operations in
 * the order they were issued, whatever their stream: an operation starts only once every operation
 * issued before it into its queue has started. A wait (an event wait, a cuStreamWaitValue32 gate,
 * an implicit synchronisation) has started only once it is satisfied, and an operation cannot start
 * before its own stream's previous one has finished (each stream's thread runs its operations in
 * order): so a gate at the head of a queue blocks everything issued after it into that queue, on
 * any stream (the false dependency cuStreamWaitValue32's documentation warns of), while a kernel,
 * once started, runs beside the later ones. */
static int emu_ticket_turn(void *arg)
{
    const struct emu_op *op = arg;
    return atomic_load_explicit(op->qstarted, memory_order_acquire) + 1 >= op->ticket;
}

/* After a trap nothing of the context runs (a real GPU drops the work; host functions are not
 * called either, as cuLaunchHostFunc documents): the op only leaves the queue. */
static void emu_op_run_live(struct emu_op *op)
{
    if (emu_sticky() == CUDA_SUCCESS)
        emu_op_run(op);
}

static int emu_op_is_wait(const struct emu_op *op)
{
    return op->kind == EMU_OP_WAIT_EVENT || op->kind == EMU_OP_WAIT_VALUE ||
           op->kind == EMU_OP_WAIT_SEQ || op->kind == EMU_OP_WAIT_IPC;
}

static void emu_queue_started(const struct emu_op *op)
{
    atomic_store_explicit(op->qstarted, op->ticket, memory_order_release);
    emu_notify();
}

static void emu_queue_run(struct emu_op *op)
{
    if (!op->ticket) {
        emu_op_run_live(op);
        return;
    }
    emu_wait(emu_ticket_turn, op, 0);
    if (emu_op_is_wait(op)) {
        emu_op_run_live(op); /* dispatched once satisfied */
        emu_queue_started(op);
    } else {
        emu_queue_started(op);
        emu_op_run_live(op);
    }
}

/* Set on every stream's own thread: work it launches never waits for room (emu_stream_wait_room).
 */
static __thread int emu_tls_stream_thread;

static void *emu_stream_main(void *arg)
{
    struct CUstream_st *s = arg;
    emu_tls_stream_thread = 1;
    for (;;) {
        pthread_mutex_lock(&s->lock);
        while (!s->head && !s->stopping)
            pthread_cond_wait(&s->cond, &s->lock);
        struct emu_op *op = s->head;
        if (op) {
            s->head = op->next;
            if (!s->head)
                s->tail = NULL;
        }
        pthread_mutex_unlock(&s->lock);
        if (!op)
            break;
        int internal = op->kind == EMU_OP_WAIT_SEQ;
        emu_queue_run(op);
        emu_op_free(op);
        if (!internal)
            atomic_fetch_add_explicit(&s->executed, 1, memory_order_release);
        atomic_fetch_add_explicit(&s->done, 1, memory_order_release);
        emu_notify();
    }
    return NULL;
}

/* Append op to the queue; returns its position. Caller holds s->lock. */
static uint64_t emu_stream_append_locked(struct CUstream_st *s, struct emu_op *op)
{
    op->next = NULL;
    op->qstarted = &s->ctx->qstarted[s->queue];
    op->ticket = emu_g.nqueues ? atomic_fetch_add(&s->ctx->qtickets[s->queue], 1) + 1 : 0;
    if (s->tail)
        s->tail->next = op;
    else
        s->head = op;
    s->tail = op;
    return ++s->submitted;
}

/* Prepend to *list a wait for stream d to reach the work submitted so far, if it is pending.
 * Takes a reference to d for the op. */
static void emu_deps_add(struct emu_op **list, struct CUstream_st *d)
{
    pthread_mutex_lock(&d->lock);
    uint64_t seq = d->submitted;
    pthread_mutex_unlock(&d->lock);
    if (atomic_load_explicit(&d->done, memory_order_acquire) >= seq)
        return;
    struct emu_op *w = emu_op_new(EMU_OP_WAIT_SEQ);
    if (!w)
        return; /* best effort */
    if (!d->is_default)
        atomic_fetch_add(&d->refs, 1);
    w->u.seqw.stream = d;
    w->u.seqw.seq = seq;
    w->next = *list;
    *list = w;
}

/* Implicit synchronisation of the legacy stream (EMU_CUDA_LEGACY_SYNC=1): work on the default
 * stream waits for the work already submitted to the context's blocking streams, and work on a
 * blocking stream waits for the work already submitted to the default stream. Computed before
 * s->lock is taken (lock order: emu_g.lock, then one stream lock at a time). */
static struct emu_op *emu_legacy_deps(struct CUstream_st *s)
{
    struct emu_op *list = NULL;
    if (!emu_g.legacy_sync || (!s->is_default && (s->flags & CU_STREAM_NON_BLOCKING)))
        return NULL;
    if (!s->is_default) {
        emu_deps_add(&list, s->ctx->def);
        return list;
    }
    pthread_mutex_lock(&emu_g.lock);
    for (struct CUstream_st *b = s->ctx->streams; b; b = b->ctx_next)
        if (!(b->flags & CU_STREAM_NON_BLOCKING))
            emu_deps_add(&list, b);
    pthread_mutex_unlock(&emu_g.lock);
    return list;
}

CUresult emu_stream_wait_ctx(struct CUstream_st *s)
{
    struct emu_op *list = NULL;
    CUresult rc = CUDA_SUCCESS;

    pthread_mutex_lock(&emu_g.lock);
    emu_deps_add(&list, s->ctx->def);
    for (struct CUstream_st *b = s->ctx->streams; b; b = b->ctx_next)
        if (b != s)
            emu_deps_add(&list, b);
    pthread_mutex_unlock(&emu_g.lock);
    pthread_mutex_lock(&s->lock);
    if (!s->thread_started && pthread_create(&s->thread, NULL, emu_stream_main, s)) {
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
        s->thread_started = 1;
        while (list) {
            struct emu_op *d = list;
            list = d->next;
            emu_stream_append_locked(s, d);
        }
        pthread_cond_signal(&s->cond);
    }
    pthread_mutex_unlock(&s->lock);
    while (list) {
        struct emu_op *d = list;
        list = d->next;
        emu_op_free(d);
    }
    return rc;
}

static void emu_ops_free_list(struct emu_op *list)
{
    while (list) {
        struct emu_op *next = list->next;
        emu_op_free(list);
        list = next;
    }
}

/* An event record on a stream with nothing queued or running fires at once, in the caller, as a
 * GPU that is idle writes its timestamp as soon as it reads the record: a real driver never hands
 * a record to a host thread, and the hand-off (a wake-up and a context switch, 6-8 us here) made
 * the emulated record dearer than a real one. The caller then spends what a real record costs the
 * host (EMU_CUDA_RECORD_NS / _NOTIMING_NS, so that the emulator is never cheaper than a GPU). A
 * record behind queued work is queued: no wake-up is needed then, the thread is busy. */
static int emu_stream_idle_locked(struct CUstream_st *s)
{
    return !s->head && atomic_load_explicit(&s->done, memory_order_acquire) == s->submitted;
}

static void emu_spin_until(uint64_t t_end)
{
    while (emu_now_ns() < t_end) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
}

/* Whether s can take one more operation without exceeding EMU_CUDA_QUEUE_DEPTH. */
static int emu_stream_has_room(void *arg)
{
    struct CUstream_st *s = arg;
    pthread_mutex_lock(&s->lock);
    uint64_t pending = s->user_submitted - atomic_load_explicit(&s->executed, memory_order_acquire);
    int room = pending < emu_g.queue_depth || s->stopping ||
               s->cap_status != CU_STREAM_CAPTURE_STATUS_NONE;
    pthread_mutex_unlock(&s->lock);
    return room;
}

void emu_stream_wait_room(struct CUstream_st *s)
{
    if (!emu_g.queue_depth || emu_tls_stream_thread)
        return;
    /* the stream's thread notifies after every operation it finishes */
    emu_wait(emu_stream_has_room, s, 0);
}

CUresult emu_stream_submit(struct CUstream_st *s, struct emu_op *op, uint64_t *seq)
{
    emu_stream_wait_room(s);
    return emu_stream_submit_now(s, op, seq);
}

CUresult emu_stream_submit_now(struct CUstream_st *s, struct emu_op *op, uint64_t *seq)
{
    CUresult rc = CUDA_SUCCESS;
    uint64_t pos = 0, t0 = 0;
    int inlined = 0;
    struct emu_op *deps = emu_legacy_deps(s);
    op->next = NULL;
    pthread_mutex_lock(&s->lock);
    if (op->kind == EMU_OP_RECORD && emu_g.inline_record && !deps && !s->stopping &&
        s->cap_status == CU_STREAM_CAPTURE_STATUS_NONE && emu_stream_idle_locked(s)) {
        t0 = emu_now_ns(); /* the price is charged from here: only a record fired here pays it */
        emu_op_run(op);
        pos = ++s->submitted;
        s->user_submitted++;
        atomic_fetch_add_explicit(&s->executed, 1, memory_order_release);
        atomic_fetch_add_explicit(&s->done, 1, memory_order_release);
        inlined = 1;
    } else if (s->stopping) {
        rc = CUDA_ERROR_INVALID_HANDLE;
    } else if (s->cap_status == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
        struct CUgraph_st *g = s->cap_graph;
        if (g->tail)
            g->tail->next = op;
        else
            g->head = op;
        g->tail = op;
        g->nops++;
    } else if (s->cap_status == CU_STREAM_CAPTURE_STATUS_INVALIDATED) {
        rc = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    } else if (!s->thread_started && pthread_create(&s->thread, NULL, emu_stream_main, s)) {
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
        s->thread_started = 1;
        while (deps) {
            struct emu_op *d = deps;
            deps = d->next;
            emu_stream_append_locked(s, d);
        }
        pos = emu_stream_append_locked(s, op);
        s->user_submitted++;
        pthread_cond_signal(&s->cond);
    }
    pthread_mutex_unlock(&s->lock);
    emu_ops_free_list(deps);
    if (inlined) {
        uint64_t cost = op->u.mark.timing ? emu_g.record_ns : emu_g.record_notiming_ns;
        emu_op_free(op);
        emu_notify();
        emu_spin_until(t0 + cost);
    }
    if (seq)
        *seq = pos;
    return rc;
}

void emu_stream_shutdown(struct CUstream_st *s)
{
    pthread_mutex_lock(&s->lock);
    int started = s->thread_started;
    s->stopping = 1;
    pthread_cond_signal(&s->cond);
    pthread_mutex_unlock(&s->lock);
    if (started)
        pthread_join(s->thread, NULL);
}

struct emu_seq_wait {
    struct CUstream_st *s;
    uint64_t seq;
};

static int emu_seq_reached(void *arg)
{
    struct emu_seq_wait *w = arg;
    return atomic_load_explicit(&w->s->done, memory_order_acquire) >= w->seq;
}

void emu_stream_wait_seq(struct CUstream_st *s, uint64_t seq)
{
    struct emu_seq_wait w = {s, seq};
    emu_wait(emu_seq_reached, &w, 0);
}

/* Synchronize or query on a capturing stream is not allowed, and invalidates the capture. */
static CUresult emu_stream_capture_misuse_locked(struct CUstream_st *s)
{
    if (s->cap_status == CU_STREAM_CAPTURE_STATUS_NONE)
        return CUDA_SUCCESS;
    s->cap_status = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

CUresult emu_stream_sync(struct CUstream_st *s)
{
    pthread_mutex_lock(&s->lock);
    CUresult rc = emu_stream_capture_misuse_locked(s);
    uint64_t target = s->submitted;
    pthread_mutex_unlock(&s->lock);
    if (rc)
        return rc;
    emu_stream_wait_seq(s, target);
    return emu_sticky(); /* a trap ends the wait */
}

CUresult emu_submit_to(CUstream h, struct emu_op *op, int sync)
{
    struct CUstream_st *s;
    CUresult rc = emu_stream_get(h, &s);
    if (rc) {
        emu_op_free(op);
        return rc;
    }
    uint64_t seq = 0;
    rc = emu_stream_submit(s, op, &seq);
    if (rc)
        emu_op_free(op);
    else if (sync && seq)
        emu_stream_wait_seq(s, seq);
    emu_stream_put(s);
    return rc ? rc : sync ? emu_sticky() : CUDA_SUCCESS;
}

CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority)
{
    struct CUctx_st *ctx;
    CUresult rc = emu_current_ctx(&ctx);
    if (rc)
        return rc;
    if (!phStream || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING))
        return CUDA_ERROR_INVALID_VALUE;
    /* Clamp to [greatest, least] = [-5, 0] as the real driver does. */
    priority = priority < -5 ? -5 : priority > 0 ? 0 : priority;
    struct CUstream_st *s = emu_stream_alloc(ctx, flags, priority, 0);
    if (!s)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&emu_g.lock);
    if (ctx->destroyed || emu_ptrset_add(&emu_g.streams, s)) {
        rc = ctx->destroyed ? CUDA_ERROR_INVALID_CONTEXT : CUDA_ERROR_OUT_OF_MEMORY;
    } else {
        s->ctx_next = ctx->streams;
        ctx->streams = s;
    }
    pthread_mutex_unlock(&emu_g.lock);
    if (rc) {
        emu_stream_free(s);
        return rc;
    }
    *phStream = s;
    return CUDA_SUCCESS;
}

CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
    EMU_FAULT_POINT("cuStreamCreate");
    return cuStreamCreateWithPriority(phStream, Flags, 0);
}

/* Waits for the stream's queued work, joins its thread, then frees it (unlike a real driver,
 * which returns at once and releases the stream later). */
CUresult cuStreamDestroy_v2(CUstream hStream)
{
    CUresult rc = emu_check_init();
    if (rc)
        return rc;
    if (hStream == NULL || hStream == CU_STREAM_LEGACY || hStream == CU_STREAM_PER_THREAD)
        return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&emu_g.lock);
    if (emu_ptrset_del(&emu_g.streams, hStream)) {
        pthread_mutex_unlock(&emu_g.lock);
        return CUDA_ERROR_INVALID_HANDLE;
    }
    struct CUstream_st **pp = &hStream->ctx->streams;
    while (*pp && *pp != hStream)
        pp = &(*pp)->ctx_next;
    if (*pp)
        *pp = hStream->ctx_next;
    pthread_mutex_unlock(&emu_g.lock);
    emu_stream_shutdown(hStream);
    emu_stream_put(hStream);
    return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream hStream)
{
    EMU_FAULT_POINT("cuStreamSynchronize");
    struct CUstream_st *s;
    CUresult rc = emu_capture_unsafe_call();
    if (rc)
        return rc;
    rc = emu_stream_get(hStream, &s);
    if (rc)
        return rc;
    rc = emu_stream_sync(s);
    emu_stream_put(s);
    return rc;
}

CUresult cuStreamQuery(CUstream hStream)
{
    struct CUstream_st *s;
    CUresult rc = emu_capture_unsafe_call();
    if (rc)
        return rc;
    rc = emu_stream_get(hStream, &s);
    if (rc)
        return rc;
    pthread_mutex_lock(&s->lock);
    rc = emu_stream_capture_misuse_locked(s);
    uint64_t target = s->submitted;
    pthread_mutex_unlock(&s->lock);
    if (!rc && atomic_load_explicit(&s->done, memory_order_acquire) < target)
        rc = CUDA_ERROR_NOT_READY;
    emu_stream_put(s);
    return rc;
}

/* emu_stream_get() for a query that writes to `out`: INVALID_VALUE (nothing held) when it is NULL.
 */
static CUresult emu_stream_get_for(CUstream hStream, const void *out, struct CUstream_st **s)
{
    CUresult rc = emu_stream_get(hStream, s);
    if (rc || out)
        return rc;
    emu_stream_put(*s);
    return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuStreamGetCtx(CUstream hStream, CUcontext *pctx)
{
    struct CUstream_st *s;
    CUresult rc = emu_stream_get_for(hStream, pctx, &s);
    if (rc)
        return rc;
    *pctx = s->ctx;
    emu_stream_put(s);
    return CUDA_SUCCESS;
}

CUresult cuStreamGetDevice(CUstream hStream, CUdevice *device)
{
    struct CUstream_st *s;
    CUresult rc = emu_stream_get_for(hStream, device, &s);
    if (rc)
        return rc;
    *device = s->ctx->dev;
    emu_stream_put(s);
    return CUDA_SUCCESS;
}

CUresult cuStreamGetFlags(CUstream hStream, unsigned int *flags)
{
    struct CUstream_st *s;
    CUresult rc = emu_stream_get_for(hStream, flags, &s);
    if (rc)
        return rc;
    *flags = s->flags;
    emu_stream_put(s);
    return CUDA_SUCCESS;
}

CUresult cuStreamGetPriority(CUstream hStream, int *priority)
{
    struct CUstream_st *s;
    CUresult rc = emu_stream_get_for(hStream, priority, &s);
    if (rc)
        return rc;
    *priority = s->priority;
    emu_stream_put(s);
    return CUDA_SUCCESS;
}

CUresult cuStreamGetId(CUstream hStream, unsigned long long *streamId)
{
    struct CUstream_st *s;
    CUresult rc = emu_stream_get_for(hStream, streamId, &s);
    if (rc)
        return rc;
    *streamId = s->id;
    emu_stream_put(s);
    return CUDA_SUCCESS;
}

/* ---- capture ---------------------------------------------------------------------------- */

static __thread CUstreamCaptureMode emu_tls_capture_mode; /* 0: GLOBAL, the default */

CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
    if (!mode || (unsigned)*mode > CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    CUstreamCaptureMode old = emu_tls_capture_mode;
    emu_tls_capture_mode = *mode;
    *mode = old;
    return CUDA_SUCCESS;
}

/* Whether capture s forbids a potentially unsafe call of this thread (see emu_internal.h). */
static int emu_capture_forbids_locked(const struct CUstream_st *s)
{
    if (s->cap_status != CU_STREAM_CAPTURE_STATUS_ACTIVE ||
        s->cap_mode == CU_STREAM_CAPTURE_MODE_RELAXED)
        return 0;
    if (pthread_equal(s->cap_thread, pthread_self()))
        return 1;
    return s->cap_mode == CU_STREAM_CAPTURE_MODE_GLOBAL &&
           emu_tls_capture_mode == CU_STREAM_CAPTURE_MODE_GLOBAL;
}

CUresult emu_capture_unsafe_call(void)
{
    CUresult rc = CUDA_SUCCESS;

    if (atomic_load_explicit(&emu_g.captures, memory_order_acquire) == 0 ||
        emu_tls_capture_mode == CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_SUCCESS;
    pthread_mutex_lock(&emu_g.lock);
    for (struct CUctx_st *ctx = emu_g.all_ctxs; ctx; ctx = ctx->all_next)
        for (struct CUstream_st *s = ctx->streams; s; s = s->ctx_next) {
            pthread_mutex_lock(&s->lock);
            if (emu_capture_forbids_locked(s)) {
                s->cap_status = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
                rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
            }
            pthread_mutex_unlock(&s->lock);
        }
    pthread_mutex_unlock(&emu_g.lock);
    return rc;
}

CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode)
{
    struct CUstream_st *s;
    if ((unsigned)mode > CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = emu_stream_get(hStream, &s);
    if (rc)
        return rc;
    if (s->is_default) {
        emu_stream_put(s);
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    struct CUgraph_st *g = emu_graph_new(emu_next_id());
    if (!g) {
        emu_stream_put(s);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    pthread_mutex_lock(&s->lock);
    if (s->cap_status != CU_STREAM_CAPTURE_STATUS_NONE) {
        rc = CUDA_ERROR_ILLEGAL_STATE;
    } else {
        s->cap_status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
        s->cap_mode = mode;
        s->cap_thread = pthread_self();
        if (mode != CU_STREAM_CAPTURE_MODE_RELAXED)
            atomic_fetch_add_explicit(&emu_g.captures, 1, memory_order_release);
        s->cap_id = g->capture_id;
        s->cap_graph = g;
        g = NULL;
    }
    pthread_mutex_unlock(&s->lock);
    if (g)
        emu_graph_free(g);
    emu_stream_put(s);
    return rc;
}

CUresult cuStreamEndCapture(CUstream hStream, CUgraph *phGraph)
{
    struct CUstream_st *s;
    CUresult rc = emu_stream_get(hStream, &s);
    if (rc)
        return rc;
    if (!phGraph) {
        emu_stream_put(s);
        return CUDA_ERROR_INVALID_VALUE;
    }
    pthread_mutex_lock(&s->lock);
    struct CUgraph_st *g = s->cap_graph;
    CUstreamCaptureStatus st = s->cap_status;
    if (st != CU_STREAM_CAPTURE_STATUS_NONE && s->cap_mode != CU_STREAM_CAPTURE_MODE_RELAXED)
        atomic_fetch_sub_explicit(&emu_g.captures, 1, memory_order_release);
    s->cap_status = CU_STREAM_CAPTURE_STATUS_NONE;
    s->cap_id = 0;
    s->cap_graph = NULL;
    pthread_mutex_unlock(&s->lock);
    *phGraph = NULL;
    if (st == CU_STREAM_CAPTURE_STATUS_NONE) {
        rc = CUDA_ERROR_ILLEGAL_STATE;
    } else if (st == CU_STREAM_CAPTURE_STATUS_INVALIDATED) {
        rc = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    } else {
        pthread_mutex_lock(&emu_g.lock);
        if (emu_ptrset_add(&emu_g.graphs, g))
            rc = CUDA_ERROR_OUT_OF_MEMORY;
        pthread_mutex_unlock(&emu_g.lock);
        if (!rc) {
            *phGraph = g;
            g = NULL;
        }
    }
    if (g)
        emu_graph_free(g);
    emu_stream_put(s);
    return rc;
}

CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{
    EMU_FAULT_POINT("cuStreamIsCapturing");
    struct CUstream_st *s;
    CUresult rc = emu_stream_get(hStream, &s);
    if (rc)
        return rc;
    if (captureStatus) {
        pthread_mutex_lock(&s->lock);
        *captureStatus = s->cap_status;
        pthread_mutex_unlock(&s->lock);
    } else {
        rc = CUDA_ERROR_INVALID_VALUE;
    }
    emu_stream_put(s);
    return rc;
}

CUresult cuStreamGetCaptureInfo_v3(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
                                   cuuint64_t *id_out, CUgraph *graph_out,
                                   const CUgraphNode **dependencies_out,
                                   const CUgraphEdgeData **edgeData_out,
                                   size_t *numDependencies_out)
{
    struct CUstream_st *s;
    CUresult rc = emu_stream_get(hStream, &s);
    if (rc)
        return rc;
    if (!captureStatus_out) {
        emu_stream_put(s);
        return CUDA_ERROR_INVALID_VALUE;
    }
    pthread_mutex_lock(&s->lock);
    CUstreamCaptureStatus st = s->cap_status;
    *captureStatus_out = st;
    if (id_out && st != CU_STREAM_CAPTURE_STATUS_NONE)
        *id_out = s->cap_id;
    if (graph_out && st == CU_STREAM_CAPTURE_STATUS_ACTIVE)
        *graph_out = s->cap_graph;
    pthread_mutex_unlock(&s->lock);
    if (dependencies_out && st == CU_STREAM_CAPTURE_STATUS_ACTIVE)
        *dependencies_out = NULL;
    if (edgeData_out && st == CU_STREAM_CAPTURE_STATUS_ACTIVE)
        *edgeData_out = NULL;
    if (numDependencies_out && st == CU_STREAM_CAPTURE_STATUS_ACTIVE)
        *numDependencies_out = 0;
    emu_stream_put(s);
    return rc;
}

/* ---- introspection (emu_cuda.h) ----------------------------------------------------------- */

uint64_t emuStreamOpsExecuted(CUstream h)
{
    struct CUstream_st *s;
    if (emu_stream_get(h, &s))
        return 0;
    uint64_t n = atomic_load_explicit(&s->executed, memory_order_acquire);
    emu_stream_put(s);
    return n;
}

uint64_t emuStreamOpsPending(CUstream h)
{
    struct CUstream_st *s;
    if (emu_stream_get(h, &s))
        return 0;
    pthread_mutex_lock(&s->lock);
    uint64_t sub = s->user_submitted;
    pthread_mutex_unlock(&s->lock);
    uint64_t n = sub - atomic_load_explicit(&s->executed, memory_order_acquire);
    emu_stream_put(s);
    return n;
}
