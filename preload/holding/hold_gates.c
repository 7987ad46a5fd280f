/* Making a held block's dependencies real (docs/completion-holding.md, rules 4, 6 and 8, and "Rank
 * consistency"): a GPU gate on a block's gate word, issuing a virtual record behind gates,
 * materialising a stream before real work, releasing the open blocks a host synchronisation is
 * behind (by their issuing thread at its program-order point; another thread waits on the host),
 * real work on a stream (rule 4 and its exception), and the one hardware queue of
 * CUDA_DEVICE_MAX_CONNECTIONS=1 ("Issue 37, item 6"). */
#include "holding/hold_gates.h"

#include <stdlib.h>
#include <time.h>

#include "comm.h"
#include "holding/hold_tables.h"
#include "real_libs/cuda_driver.h"
#include "debug_log/log_line.h"
#include "config/process_config.h"

/* Releases c's open block (takes the comm lock): set by comm_life.c, so that this file calls
 * nothing above it (release.c calls prophet_hold_block_released). */
static void (*_Atomic hold_release_fn)(prophet_comm_t *c);

void prophet_hold_set_release(void (*fn)(prophet_comm_t *c))
{
    atomic_store(&hold_release_fn, fn);
}

/* ---- making dependencies real ------------------------------------------------------------- */

/* Stream `real` waits for block d (open or released) unless it has already completed. */
CUresult prophet_hold_gate(CUstream real, const hold_dep_t *d)
{
    uint32_t g;

    if (prophet_hold_complete(d))
        return CUDA_SUCCESS;
    g = atomic_load_explicit(&d->c->gated_gen, memory_order_relaxed);
    while ((int32_t)(d->gen - g) > 0 &&
           !atomic_compare_exchange_weak_explicit(&d->c->gated_gen, &g, d->gen,
                                                  memory_order_relaxed, memory_order_relaxed))
        ;
    return prophet_cu.StreamWaitValue32(real, d->c->gpu.gate_dev, d->gen, CU_STREAM_WAIT_VALUE_GEQ);
}

/* Issues virtual record r for real on its own stream, behind gates on its dependencies. */
CUresult prophet_hold_rec_issue_on_stream(hold_rec_t *r)
{
    CUresult rc = CUDA_SUCCESS, r2;
    hold_stream_t *s = r->s;

    for (int i = 0; i < r->deps.n; i++)
        if ((r2 = prophet_hold_gate(s->real, &r->deps.d[i])) != CUDA_SUCCESS && rc == CUDA_SUCCESS)
            rc = r2;
    for (int i = 0; i < r->deps.n; i++)
        if (prophet_hold_is_open(&r->deps.d[i]))
            prophet_hold_dep_add(&r->taint, r->deps.d[i].c, r->deps.d[i].gen);
    prophet_hold_stream_touched(s);
    if ((r2 = prophet_cu.EventRecord(r->ev, s->real)) != CUDA_SUCCESS && rc == CUDA_SUCCESS)
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

/* Real work is about to be enqueued on h (or the host waits for it): its virtual dependencies
 * become GPU gates (still open blocks: the stream is then materially behind them), and its
 * pending virtual records are issued behind those gates. Never releases anything. */
CUresult prophet_hold_materialise(hold_stream_t *h)
{
    CUresult rc = CUDA_SUCCESS, r2;

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
    for (hold_rec_t *r = prophet_hold_virt_head, *n; r; r = n) {
        n = r->vnext;
        if (r->s != h)
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
                pthread_mutex_unlock(&prophet_hold_lock);
                release(open[i].c);
                pthread_mutex_lock(&prophet_hold_lock);
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
            pthread_cond_timedwait(&prophet_hold_cond, &prophet_hold_lock, &ts);
        }
    }
}

/* ---- CUDA_DEVICE_MAX_CONNECTIONS=1 ----------------------------------------------------------
 * Every stream's work then goes through one hardware queue in issue order: a GPU gate on an open
 * block (cuStreamWaitValue32) blocks everything issued after it, the block's own launch on X
 * included, which is issued only at its release: a deadlock (preload.prophet_hold_one_queue). With
 * one connection, real work on a stream behind an open block releases that block first (by its
 * issuing thread at this program-order point; another thread waits on the host for it, as a host
 * synchronisation does); the gate then waits for a released block, whose launch is ahead of it
 * in the queue. */
int prophet_hold_one_queue(void)
{
    static int v = -1;

    if (v < 0) {
        const char *e = getenv("CUDA_DEVICE_MAX_CONNECTIONS");
        v = e && atoi(e) == 1;
    }
    return v;
}

/* Adds the open blocks h is virtually behind to `out` when one hardware queue is all there is. */
static void hold_one_queue_collect(const hold_stream_t *h, hold_depset_t *out)
{
    if (prophet_hold_one_queue())
        prophet_hold_collect_open(&h->vdeps, out);
}

/* Real work on s. When it lands on the members' stream of an open block that this thread issued,
 * no later call of that stream can join the block any more (it is materially behind it): the block
 * is released here, a program-order point of the issuing thread (the same on every rank), so that
 * no host synchronisation of another thread waits for it (Horovod's copy-out after the call). */
void prophet_hold_work(CUstream s, int ptsz, int may_release)
{
    hold_depset_t dead = {0};
    hold_stream_t *h;

    if (!prophet_hold_armed() || prophet_hold_forked)
        return;
    HOLD_LOCK();
    if ((h = prophet_hold_stream(s, ptsz)) != NULL) {
        for (int i = 0; may_release && i < h->vdeps.n; i++) {
            hold_comm_t *hc = prophet_hold_comm(h->vdeps.d[i].c);
            if (hc && prophet_hold_is_open(&h->vdeps.d[i]) && hc->stream == h->key &&
                pthread_equal(hc->owner, pthread_self()))
                prophet_hold_dep_add(&dead, h->vdeps.d[i].c, h->vdeps.d[i].gen);
        }
        if (may_release)
            hold_one_queue_collect(h, &dead);
        if (dead.n)
            prophet_hold_release_or_wait(dead.d, dead.n);
        prophet_hold_stream_prune(h);
        prophet_hold_materialise(h);
        prophet_hold_stream_touched(h);
    }
    prophet_hold_rearm();
    HOLD_UNLOCK();
    prophet_hold_depset_free(&dead);
}
