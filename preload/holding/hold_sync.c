/* Queries, host synchronisations, frees and the life of events and streams
 * (docs/completion-holding.md, H5, H6, H8 and H11, and "Rank-local host events"): a query or an
 * elapsed time on something behind a held block answers NOT_READY and releases nothing, unless its
 * issuing thread polls it (H5); an event or stream synchronisation releases (or waits for) the
 * open blocks it is behind first (H6); a context synchronisation or a free, which names no held
 * call, releases only what the driver would wait for forever; an event's destruction is deferred
 * while it has a virtual record (H8), a stream's is a synchronisation (H6) and forgets it;
 * a created stream's flags (H11). */
#include <stdatomic.h>
#include <stdlib.h>

#include "holding/holding.h"
#include "holding/hold_tables.h"
#include "holding/hold_gates.h"
#include "debug_lines/log_line.h"
#include "config/process_config.h"
#include "real_libs/cuda_driver.h"

/* ---- polling (H5) ------------------------------------------------------------------------
 * A query of something behind a held block answers NOT_READY and releases nothing: a watchdog
 * thread's queries never change the grouping. But a thread that waits for a held call by polling
 * it (TORCH_NCCL_BLOCKING_WAIT=1, work.wait(timeout), `while not work.is_completed()`) would spin
 * forever on a call that only its own next program-order point releases. A poll is recognised
 * as the thread that issued the block asking again about a record (or stream) it already asked
 * about, with nothing but queries in between (no launch, record, wait, synchronisation or held
 * call of that thread): every rank's waiting loop gets there, at the same call of the job, and
 * the block is released there by its issuing thread. The caching allocator's queries of the
 * events it recorded are made one per allocation, with the job's launches in between: no poll. */
#define HOLD_POLL_MAX 8
static PROPHET_TLS const void *hold_poll_seen[HOLD_POLL_MAX];
static PROPHET_TLS int hold_poll_n;
static PROPHET_TLS unsigned long hold_poll_epoch = ~0ul;

/* 1 when this thread asked about `what` before, with only queries since. */
static int hold_poll_again(const void *what)
{
    if (hold_poll_epoch != prophet_hold_entries_) { /* something else ran in between */
        hold_poll_epoch = prophet_hold_entries_;
        hold_poll_n = 0;
    }
    for (int i = 0; i < hold_poll_n; i++)
        if (hold_poll_seen[i] == what)
            return 1;
    if (hold_poll_n < HOLD_POLL_MAX)
        hold_poll_seen[hold_poll_n++] = what;
    return 0;
}

/* Adds the open blocks among `s` that this thread issued to `out`. Called locked. */
static void hold_collect_mine(const hold_depset_t *s, hold_depset_t *out)
{
    pthread_t self = pthread_self();

    for (int i = 0; i < s->n; i++) {
        hold_comm_t *hc = prophet_hold_comm(s->d[i].c);
        if (hc && prophet_hold_is_open(&s->d[i]) && pthread_equal(hc->owner, self) &&
            prophet_hold_dep_add(out, s->d[i].c, s->d[i].gen) != 0)
            prophet_msg(PROPHET_LOG_WARN, "out of memory collecting the held blocks to release");
    }
}

/* A poll of a held block by its issuing thread: its blocks are released here (logged once). */
static void hold_poll_release(hold_depset_t *mine)
{
    static atomic_int logged;

    if (mine->n == 0)
        return;
    if (!atomic_exchange(&logged, 1))
        prophet_msg(PROPHET_LOG_INFO, "a thread polls a held all-reduce (cuEventQuery or "
                                      "cuStreamQuery again with nothing in between): its block "
                                      "is released there, as at a synchronisation");
    prophet_hold_release_or_wait(mine->d, mine->n);
}

int prophet_hold_event_query(CUevent e, CUresult *rc)
{
    hold_depset_t mine = {0};
    hold_rec_t *r;
    int handled = 0;

    if (prophet_hold_skip_query())
        return 0;
    HOLD_LOCK();
    if ((r = prophet_hold_rec_find(e)) != NULL && r->virt) {
        if (hold_poll_again(e)) {
            hold_collect_mine(&r->deps, &mine);
            hold_poll_release(&mine);
            r = prophet_hold_rec_find(e); /* released: issued on X, the driver answers */
        }
        if (r && r->virt) {
            *rc = CUDA_ERROR_NOT_READY; /* releases nothing: a watchdog never changes a group */
            handled = 1;
        }
    }
    HOLD_UNLOCK();
    prophet_hold_depset_free(&mine);
    return handled;
}

/* 1 when h is behind a block that has not completed, or has a pending virtual record. */
static int hold_stream_pending(hold_stream_t *h)
{
    for (int i = 0; i < h->vdeps.n; i++)
        if (!prophet_hold_complete(&h->vdeps.d[i]))
            return 1;
    for (hold_rec_t *r = prophet_hold_engine.virt_head; r; r = r->vnext)
        if (r->s == h)
            return 1;
    return 0;
}

int prophet_hold_stream_query(CUstream s, int ptsz, CUresult *rc)
{
    hold_depset_t mine = {0};
    CUstream key, real;
    int legacy, perthread, handled = 0;
    hold_stream_t *h;

    if (prophet_hold_skip_query())
        return 0;
    prophet_hold_stream_norm(s, ptsz, &key, &real, &legacy, &perthread);
    HOLD_LOCK();
    if ((h = prophet_hold_stream_lookup(key)) != NULL && hold_stream_pending(h)) {
        handled = 1;
        if (hold_poll_again(h)) {
            hold_collect_mine(&h->vdeps, &mine);
            hold_poll_release(&mine);
            if ((h = prophet_hold_stream_lookup(key)) != NULL && mine.n) {
                prophet_hold_stream_prune(h);
                prophet_hold_materialise(h); /* its records are real now: the driver answers */
                handled = hold_stream_pending(h);
            }
        }
    }
    if (handled)
        *rc = CUDA_ERROR_NOT_READY;
    prophet_hold_rearm();
    HOLD_UNLOCK();
    prophet_hold_depset_free(&mine);
    return handled;
}

int prophet_hold_event_elapsed(CUevent a, CUevent b, CUresult *rc)
{
    hold_rec_t *r;
    int handled = 0;

    if (prophet_hold_skip())
        return 0;
    HOLD_LOCK();
    if (((r = prophet_hold_rec_find(a)) != NULL && r->virt) ||
        ((r = prophet_hold_rec_find(b)) != NULL && r->virt)) {
        *rc = CUDA_ERROR_NOT_READY;
        handled = 1;
    }
    HOLD_UNLOCK();
    return handled;
}

void prophet_hold_event_sync(CUevent e)
{
    hold_depset_t open = {0};
    hold_rec_t *r;

    if (prophet_hold_skip())
        return;
    HOLD_LOCK();
    if ((r = prophet_hold_rec_find(e)) != NULL) {
        prophet_hold_collect_open(&r->deps, &open);
        prophet_hold_collect_open(&r->taint, &open);
    }
    prophet_hold_release_or_wait(open.d, open.n);
    /* released: the record was issued on X (or its stream); nothing else to do */
    prophet_hold_rearm();
    HOLD_UNLOCK();
    prophet_hold_depset_free(&open);
}

void prophet_hold_stream_sync(CUstream s, int ptsz)
{
    hold_depset_t open = {0};
    hold_stream_t *h;

    if (prophet_hold_skip())
        return;
    HOLD_LOCK();
    if ((h = prophet_hold_stream(s, ptsz)) != NULL) {
        prophet_hold_collect_open(&h->vdeps, &open);
        prophet_hold_collect_open(&h->taint, &open);
        prophet_hold_release_or_wait(open.d, open.n);
        prophet_hold_stream_prune(h);
        prophet_hold_materialise(h); /* the host waits for what the stream is behind */
    }
    prophet_hold_rearm();
    HOLD_UNLOCK();
    prophet_hold_depset_free(&open);
}

/* ---- rank-local host events (docs/completion-holding.md, "Rank-local host events") -----------
 * A context synchronisation or a free names no held call, and is often made by one rank alone (a
 * timer or a logger on rank 0, the caching allocator freeing under memory pressure, a profiler
 * thread): a block cut there would be cut on that rank only, and NCCL would see different groups
 * on different ranks. So they release nothing that the driver does not need: a held call has not
 * been issued yet (as a call inside an NCCL group before its ncclGroupEnd is not), and everything
 * that consumes it through CUDA stays ordered behind it by the virtual records and gates. What
 * the driver would wait for forever is released: real work gated on an open block (only the
 * scheduler's own path makes such a gate: hold_gates.c) and, for a free, a block one of whose
 * members' buffers lies in the freed allocation (its NCCL call must run before the memory goes). */

/* Adds the open blocks that real work waits for (a stream's taint) to `out`. Called locked. */
static void hold_collect_gated(hold_depset_t *out)
{
    if (!atomic_load(&prophet_hold_engine.any_taint))
        return;
    for (int b = 0; b < HOLD_STREAM_BUCKETS; b++)
        for (hold_stream_t *h = prophet_hold_engine.streams[b]; h; h = h->next)
            prophet_hold_collect_open(&h->taint, out);
}

/* 1 when [lo, hi) overlaps a buffer of hc's open block (hi == lo: the allocation's size is not
 * known, and a buffer that starts at lo or contains it counts). */
static int hold_block_overlaps(const hold_comm_t *hc, uintptr_t lo, uintptr_t hi)
{
    if (hc->nrange > HOLD_RANGES_MAX)
        return 1; /* not every buffer kept: any free may hold one */
    for (int i = 0; i < hc->nrange; i++) {
        uintptr_t a = hc->range[i][0], b = hc->range[i][1];
        if (hi > lo ? (a < hi && lo < b) : (a <= lo && lo < b))
            return 1;
    }
    return 0;
}

static void hold_release_needed(uintptr_t lo, uintptr_t hi, int is_free)
{
    hold_depset_t open = {0};

    HOLD_LOCK();
    hold_collect_gated(&open);
    for (hold_comm_t *hc = prophet_hold_engine.comm_all; is_free && hc; hc = hc->all_next)
        if (hc->open_gen && hold_block_overlaps(hc, lo, hi) &&
            prophet_hold_dep_add(&open, hc->c, hc->open_gen) != 0)
            prophet_msg(PROPHET_LOG_WARN, "out of memory collecting the held blocks to release");
    if (open.n)
        prophet_msg(PROPHET_LOG_TRACE, "%s: %d held block(s) released first",
                    is_free ? "a free" : "a context synchronisation", open.n);
    prophet_hold_release_or_wait(open.d, open.n);
    for (int b = 0; prophet_hold_engine.nlive_streams > 0 && b < HOLD_STREAM_BUCKETS; b++)
        for (hold_stream_t *h = prophet_hold_engine.streams[b]; h; h = h->next)
            prophet_hold_stream_prune(h);
    prophet_hold_rearm();
    HOLD_UNLOCK();
    prophet_hold_depset_free(&open);
}

void prophet_hold_ctx_sync(void)
{
    if (prophet_hold_skip())
        return;
    hold_release_needed(0, 0, 0);
}

void prophet_hold_mem_free(uintptr_t p, int host)
{
    uintptr_t lo = p, hi = p;

    if (prophet_hold_skip())
        return;
    if (!host && prophet_cu.MemGetAddressRange) {
        CUdeviceptr base = 0;
        size_t size = 0;
        prophet_hold_enter();
        if (prophet_cu.MemGetAddressRange(&base, &size, (CUdeviceptr)p) == CUDA_SUCCESS && size) {
            lo = (uintptr_t)base;
            hi = lo + size;
        }
        prophet_hold_leave();
    }
    hold_release_needed(lo, hi, 1);
}

int prophet_hold_event_destroy(CUevent e, CUresult *rc)
{
    hold_rec_t *r;
    int handled = 0;

    if (prophet_hold_skip())
        return 0;
    HOLD_LOCK();
    if ((r = prophet_hold_rec_find(e)) != NULL) {
        if (r->virt) {
            r->destroy = 1; /* destroyed once issued */
            *rc = CUDA_SUCCESS;
            handled = 1;
        } else {
            prophet_hold_rec_free(r);
        }
    }
    prophet_hold_rearm();
    HOLD_UNLOCK();
    return handled;
}

int prophet_hold_stream_destroy(CUstream s, CUresult *rc)
{
    hold_depset_t open = {0};
    hold_stream_t *h;

    (void)rc;
    if (prophet_hold_skip())
        return 0;
    HOLD_LOCK();
    if ((h = prophet_hold_stream_lookup(s)) != NULL && !h->legacy) {
        /* its virtual records must reach the GPU before it goes: like a synchronisation */
        prophet_hold_collect_open(&h->vdeps, &open);
        prophet_hold_collect_open(&h->taint, &open);
        prophet_hold_release_or_wait(open.d, open.n);
        prophet_hold_materialise(h);
        for (hold_rec_t *r = prophet_hold_engine.virt_head, *nx; r; r = nx) {
            nx = r->vnext;
            if (r->s == h) {
                prophet_hold_enter();
                prophet_hold_rec_issue_on_stream(r);
                prophet_hold_leave();
                prophet_hold_rec_issued(r);
            }
        }
        prophet_hold_stream_free(h); /* the handle may be reused for another stream */
    }
    prophet_hold_rearm();
    HOLD_UNLOCK();
    prophet_hold_depset_free(&open);
    return 0;
}

void prophet_hold_stream_destroying(CUstream s)
{
    hold_stream_t *h;

    if (!s || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD || prophet_hold_armed() ||
        prophet_hold_inside() || prophet_hold_engine.forked)
        return; /* while something is held, prophet_hold_stream_destroy forgets it */
    HOLD_LOCK();
    if ((h = prophet_hold_stream_lookup(s)) != NULL && !h->legacy && !prophet_hold_stream_live(h))
        prophet_hold_stream_free(h);
    HOLD_UNLOCK();
}

void prophet_hold_stream_created(CUstream s, unsigned flags)
{
    hold_stream_t *h;

    if (!s || prophet_hold_inside() || prophet_hold_engine.forked)
        return;
    prophet_hold_fork_guard(); /* the lock is taken here before anything is held */
    HOLD_LOCK();
    if ((h = prophet_hold_stream_lookup(s)) != NULL ||
        (h = prophet_hold_stream_new(s, s, 0, 0)) != NULL) {
        h->blocking = !(flags & CU_STREAM_NON_BLOCKING);
        h->flags_known = 1;
        HOLD_STREAM_CHANGE(h, h->vdeps.n = h->taint.n = 0);
        prophet_hold_stream_touched(h);
    }
    HOLD_UNLOCK();
}
