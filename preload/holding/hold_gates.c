/* Making a held block's dependencies real (docs/completion-holding.md, H4, H6 and H8, "Rank
 * consistency" and "Rank-local host events"): a GPU gate on a block's gate word (a released
 * block's only; the host waits where a gate cannot be written), issuing a virtual record behind
 * gates, materialising a stream before real work, releasing the open blocks a host
 * synchronisation is behind (by their issuing thread at its program-order point; another thread
 * waits on the host), and real work on a stream (H4), which never runs behind an open block
 * in any of CUDA_DEVICE_MAX_CONNECTIONS' hardware queues. */
#include "holding/hold_gates.h"

#include <stdlib.h>
#include <time.h>

#include "comm.h"
#include "holding/hold_tables.h"
#include "real_libs/cuda_driver.h"
#include "debug_lines/log_line.h"
#include "config/process_config.h"

/* Releases c's open block (takes the comm lock): set by comm_life.c, so that this file calls
 * nothing above it (release.c calls prophet_hold_block_released). */
static void (*_Atomic hold_release_fn)(prophet_comm_t *c);

void prophet_hold_set_release(void (*fn)(prophet_comm_t *c))
{
    atomic_store(&hold_release_fn, fn);
}

/* ---- making dependencies real ------------------------------------------------------------- */

/* The host waits until released block d has completed (its launch is ahead on X, so it does),
 * or until its communicator has failed for good (a sticky error: the gate word may then never be
 * written; the context is stopped by then, "A dropped call"). */
static void hold_gate_wait_host(const hold_dep_t *d)
{
    long ns = 20 * 1000;

    while (!prophet_hold_complete(d) && d->c->error == ncclSuccess) {
        struct timespec ts = {0, ns};
        nanosleep(&ts, NULL);
        ns = ns < 1000 * 1000 ? 2 * ns : ns;
    }
}

/* 1 when rc says the context has failed for good (a sticky error: nothing queued runs any more). */
static int hold_cuda_dead(CUresult rc)
{
    switch (rc) {
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
    case CUDA_ERROR_DEINITIALIZED:
    case CUDA_ERROR_ASSERT:
        return 1;
    default:
        return 0;
    }
}

/* Stream `real` waits for block d (open or released) unless it has already completed. When the
 * GPU gate cannot be written (stream memory operations off, a stream the driver refuses it on),
 * the gated work must still not run before the block: the host waits for a released block to
 * complete, then the work is enqueued behind nothing it needs (one WARN per process). An open
 * block cannot be waited for from here (only its issuing thread releases it): the failure is
 * returned, and the callers have released every open block they could before gating. */
CUresult prophet_hold_gate(CUstream real, const hold_dep_t *d)
{
    static atomic_int warned;
    uint32_t g;
    CUresult rc;

    if (prophet_hold_complete(d))
        return CUDA_SUCCESS;
    g = atomic_load_explicit(&d->c->gated_gen, memory_order_relaxed);
    while ((int32_t)(d->gen - g) > 0 &&
           !atomic_compare_exchange_weak_explicit(&d->c->gated_gen, &g, d->gen,
                                                  memory_order_relaxed, memory_order_relaxed))
        ;
    rc = prophet_cu.StreamWaitValue32(real, d->c->gpu.gate_dev, d->gen, CU_STREAM_WAIT_VALUE_GEQ);
    if (rc == CUDA_SUCCESS || prophet_hold_is_open(d) || hold_cuda_dead(rc))
        return rc; /* a stopped context runs nothing more: no gate is needed, none can open */
    if (!atomic_exchange(&warned, 1))
        prophet_msg(PROPHET_LOG_WARN,
                    "a GPU gate behind a held all-reduce could not be written (%s): the host "
                    "waits for the all-reduce instead, wherever a gate fails",
                    prophet_cuda_errstr(rc));
    hold_gate_wait_host(d);
    return prophet_hold_complete(d) ? CUDA_SUCCESS : rc;
}

/* 1 when h is another thread's default stream per thread: its handle, CU_STREAM_PER_THREAD,
 * names the calling thread's own stream here. */
static int hold_stream_foreign_ptds(const hold_stream_t *h)
{
    CUstream key, real;
    int legacy, perthread;

    if (h->real != CU_STREAM_PER_THREAD)
        return 0;
    prophet_hold_stream_norm(CU_STREAM_PER_THREAD, 0, &key, &real, &legacy, &perthread);
    return h->key != key;
}

/* Issues virtual record r for real on its own stream, behind gates on its dependencies. Another
 * thread's default stream per thread cannot be named from here: the record is issued on the
 * internal stream X of a communicator it depends on, behind the same gates and the recording
 * stream's prefix (its shadow), which is what the record covers. (A stream is never virtually
 * behind another thread's open block, hold_enqueue.c, so a record is made real by the thread that
 * made it; this is the guard for a path that would break that.) */
CUresult prophet_hold_rec_issue_on_stream(hold_rec_t *r)
{
    CUresult rc = CUDA_SUCCESS, r2;
    hold_stream_t *s = r->s;
    CUstream on = s->real;

    if (hold_stream_foreign_ptds(s) && r->deps.n > 0 && r->deps.d[0].c->gpu.internal_stream) {
        on = r->deps.d[0].c->gpu.internal_stream;
        if (r->sh && (r2 = prophet_cu.StreamWaitEvent(on, r->sh->ev, 0)) != CUDA_SUCCESS)
            rc = r2;
    }
    for (int i = 0; i < r->deps.n; i++)
        if ((r2 = prophet_hold_gate(on, &r->deps.d[i])) != CUDA_SUCCESS && rc == CUDA_SUCCESS)
            rc = r2;
    for (int i = 0; i < r->deps.n; i++)
        if (prophet_hold_is_open(&r->deps.d[i]))
            prophet_hold_dep_add(&r->taint, r->deps.d[i].c, r->deps.d[i].gen);
    if (on == s->real)
        prophet_hold_stream_touched(s);
    if ((r2 = prophet_cu.EventRecord(r->ev, on)) != CUDA_SUCCESS && rc == CUDA_SUCCESS)
        rc = r2;
    return rc;
}

void prophet_hold_rec_issued(hold_rec_t *r)
{
    prophet_hold_rec_unvirt(r);
    if (r->destroy) {
        prophet_cu.EventDestroy(r->ev);
        r->destroy = 0;
        r->taint.n = 0;
    }
    prophet_hold_rec_settle(r);
}

/* 1 when r depends on an open block of a communicator that `gated` does not name. */
static int hold_rec_behind_other(const hold_rec_t *r, const hold_depset_t *gated)
{
    for (int i = 0; i < r->deps.n; i++) {
        int named = 0;
        if (!prophet_hold_is_open(&r->deps.d[i]))
            continue;
        for (int j = 0; j < gated->n && !named; j++)
            named = gated->d[j].c == r->deps.d[i].c;
        if (!named)
            return 1;
    }
    return 0;
}

/* Real work is about to be enqueued on h (or the host waits for it): its virtual dependencies
 * become GPU gates (still open blocks: the stream is then materially behind them), and its
 * pending virtual records are issued behind those gates. A record that also depends on an open
 * block h no longer names (the scheduler took its own communicator's block out of h's set before
 * the call: prophet_hold_before_call) stays virtual: no gate covers that block, and it is issued
 * once that block is released. Never releases anything. */
CUresult prophet_hold_materialise(hold_stream_t *h)
{
    CUresult rc = CUDA_SUCCESS, r2;
    /* the blocks gated here: vdeps' entries, still in its array once its count is cleared below
     * (nothing adds to vdeps until the records are issued) */
    hold_depset_t gated = {.n = h->vdeps.n, .cap = 0, .d = h->vdeps.d};

    if (h->vdeps.n == 0)
        return CUDA_SUCCESS;
    prophet_hold_enter();
    HOLD_STREAM_CHANGE(h, {
        for (int i = 0; i < h->vdeps.n; i++) {
            hold_dep_t *d = &h->vdeps.d[i];
            if ((r2 = prophet_hold_gate(h->real, d)) != CUDA_SUCCESS && rc == CUDA_SUCCESS)
                rc = r2;
            if (prophet_hold_is_open(d))
                prophet_hold_dep_add(&h->taint, d->c, d->gen);
        }
        h->vdeps.n = 0;
    });
    prophet_hold_stream_touched(h);
    for (hold_rec_t *r = prophet_hold_engine.virt_head, *n; r; r = n) {
        n = r->vnext;
        if (r->s != h || hold_rec_behind_other(r, &gated))
            continue;
        /* the gates are already in front: a plain record covers them */
        for (int i = 0; i < h->taint.n; i++)
            prophet_hold_dep_add(&r->taint, h->taint.d[i].c, h->taint.d[i].gen);
        if ((r2 = prophet_cu.EventRecord(r->ev, h->real)) != CUDA_SUCCESS && rc == CUDA_SUCCESS)
            rc = r2;
        prophet_hold_rec_issued(r);
    }
    prophet_hold_leave();
    if (rc != CUDA_SUCCESS)
        prophet_msg(PROPHET_LOG_WARN, "gating stream %p behind a held all-reduce failed (%s)",
                    (void *)h->real, prophet_cuda_errstr(rc));
    return rc;
}

/* ---- releases requested by the wrappers ----------------------------------------------------- */

/* Adds the open blocks among `s` to `out` (one per comm). Called locked. */
void prophet_hold_collect_open(const hold_depset_t *s, hold_depset_t *out)
{
    for (int i = 0; i < s->n; i++)
        if (prophet_hold_is_open(&s->d[i]) &&
            prophet_hold_dep_add(out, s->d[i].c, s->d[i].gen) != 0)
            prophet_msg(PROPHET_LOG_WARN, "out of memory collecting the held blocks to release");
}

/* Makes sure every block in `open` is released: by this thread at this program-order point when
 * it issued the block, else (another thread issues the comm's calls) by waiting until that
 * thread releases it. Called with the engine lock held; drops it around the releases. */
void prophet_hold_release_or_wait(hold_dep_t *open, int n)
{
    pthread_t self = pthread_self();
    int64_t warn_at = 0; /* read the clock only when a wait begins (not per call) */
    int warned = 0;

    for (int i = 0; i < n; i++) {
        hold_comm_t *h;
        while ((h = prophet_hold_comm(open[i].c)) && h->open_gen &&
               prophet_hold_gen_before(h->open_gen, open[i].gen)) {
            if (pthread_equal(h->owner, self)) {
                void (*release)(prophet_comm_t *) = atomic_load(&hold_release_fn);
                if (!release)
                    break;
                pthread_mutex_unlock(&prophet_hold_engine.lock);
                release(open[i].c);
                pthread_mutex_lock(&prophet_hold_engine.lock);
                if (h->open_gen && prophet_hold_gen_before(h->open_gen, open[i].gen) &&
                    pthread_equal(h->owner, self))
                    break; /* nothing was pending after all (state out of step): do not spin */
                continue;
            }
            if (!h->foreign_logged) {
                h->foreign_logged = 1;
                prophet_msg(PROPHET_LOG_INFO,
                            "comm %lu: a host synchronisation on another thread waits for the "
                            "issuing thread to release block generation %u",
                            (unsigned long)open[i].c->id, open[i].gen);
            }
            if (!warn_at)
                warn_at = prophet_now_us() + (int64_t)prophet_cfg.stall_ms * 1000;
            if (!warned && prophet_now_us() > warn_at) {
                warned = 1;
                prophet_msg(PROPHET_LOG_WARN,
                            "comm %lu: a host synchronisation has waited %u ms for a held block "
                            "that only its issuing thread can release",
                            (unsigned long)open[i].c->id, prophet_cfg.stall_ms);
            }
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 5 * 1000 * 1000;
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&prophet_hold_engine.cond, &prophet_hold_engine.lock, &ts);
        }
    }
}

/* ---- a GPU gate waits for released blocks only ------------------------------------------------
 * Every stream's work goes through one of CUDA_DEVICE_MAX_CONNECTIONS hardware queues (8 by
 * default, streams mapped onto them in turn), in issue order within a queue. A GPU gate on an
 * *open* block (cuStreamWaitValue32) blocks everything issued after it in its queue, and the
 * block's own launch on X, or a later member's ready event, may be issued later into that very
 * queue: a deadlock. It would also keep real work of the job waiting for a block that only this
 * rank's next program-order point closes, so that a host synchronisation or a free that waits
 * for that work (rank-local: a timer, the allocator under memory pressure) would have to cut the
 * block on this rank alone. So real work on a stream behind an open block releases that block
 * first: by its issuing thread at this program-order point (the job consumes a held result
 * there, the same point on every rank), while another thread waits on the host until the issuing
 * thread releases it, as at a host synchronisation. A gate then always waits for work issued
 * before it, and no mapping of streams onto FIFO queues can deadlock. */

/* Real work on s (H4): every open block s is virtually behind is released first (by its
 * issuing thread; another thread waits for that release), then s really waits for the released
 * blocks and its pending virtual records are issued behind those gates. may_release is 0 on the
 * scheduler's own path (comm lock held, nothing released there). */
void prophet_hold_work(CUstream s, int ptsz, int may_release)
{
    hold_depset_t open = {0};
    hold_stream_t *h;

    if (!prophet_hold_armed() || prophet_hold_engine.forked)
        return;
    HOLD_LOCK();
    if ((h = prophet_hold_stream(s, ptsz)) != NULL) {
        if (may_release) {
            prophet_hold_collect_open(&h->vdeps, &open);
            if (open.n)
                prophet_hold_release_or_wait(open.d, open.n);
        }
        prophet_hold_stream_prune(h);
        prophet_hold_materialise(h);
        prophet_hold_stream_touched(h);
    }
    prophet_hold_rearm();
    HOLD_UNLOCK();
    prophet_hold_depset_free(&open);
}
