/* Queries, host synchronisations and the life of events and streams (docs/completion-holding.md,
 * rules 5, 6, 8 and 11): a query or an elapsed time on something behind a held block answers
 * NOT_READY and releases nothing (rule 5); an event, stream or context synchronisation releases (or
 * waits for) the open blocks it is behind first (rule 6); an event's destruction is deferred while
 * it has a virtual record (rule 8), a stream's is a synchronisation (rule 6); a created stream's
 * flags (rule 11). */
#include <stdlib.h>

#include "holding/holding.h"
#include "holding/hold_tables.h"
#include "holding/hold_gates.h"
#include "debug_log/log_line.h"
#include "config/process_config.h"

int prophet_hold_event_query(CUevent e, CUresult *rc)
{
    hold_rec_t *r;
    int handled = 0;

    if (prophet_hold_skip())
        return 0;
    HOLD_LOCK();
    if ((r = prophet_hold_rec_find(e)) != NULL && r->virt) {
        *rc = CUDA_ERROR_NOT_READY; /* releases nothing: a watchdog never changes the grouping */
        handled = 1;
    }
    HOLD_UNLOCK();
    return handled;
}

int prophet_hold_stream_query(CUstream s, int ptsz, CUresult *rc)
{
    CUstream key, real;
    int legacy, perthread, handled = 0;
    hold_stream_t *h;

    if (prophet_hold_skip())
        return 0;
    prophet_hold_stream_norm(s, ptsz, &key, &real, &legacy, &perthread);
    HOLD_LOCK();
    if ((h = prophet_hold_stream_lookup(key)) != NULL) {
        for (int i = 0; i < h->vdeps.n; i++)
            if (!prophet_hold_complete(&h->vdeps.d[i]))
                handled = 1;
        for (hold_rec_t *r = prophet_hold_virt_head; r && !handled; r = r->vnext)
            handled = r->s == h;
    }
    if (handled)
        *rc = CUDA_ERROR_NOT_READY;
    HOLD_UNLOCK();
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

void prophet_hold_ctx_sync(void)
{
    hold_depset_t open = {0};

    if (prophet_hold_skip())
        return;
    HOLD_LOCK();
    for (hold_comm_t *hc = prophet_hold_comm_all; hc; hc = hc->all_next)
        if (hc->open_gen && prophet_hold_dep_add(&open, hc->c, hc->open_gen) != 0)
            prophet_msg(PROPHET_LOG_WARN, "out of memory collecting the held blocks to release");
    prophet_hold_release_or_wait(open.d, open.n);
    /* every block is released: the context synchronisation waits for X and the records on it */
    for (int b = 0; prophet_hold_nlive_streams > 0 && b < HOLD_STREAM_BUCKETS; b++)
        for (hold_stream_t *h = prophet_hold_streams[b]; h; h = h->next)
            prophet_hold_stream_prune(h);
    prophet_hold_rearm();
    HOLD_UNLOCK();
    prophet_hold_depset_free(&open);
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
        for (hold_rec_t *r = prophet_hold_virt_head, *nx; r; r = nx) {
            nx = r->vnext;
            if (r->s == h) {
                prophet_hold_enter();
                prophet_hold_rec_issue_on_stream(r);
                prophet_hold_leave();
                prophet_hold_rec_issued(r);
            }
        }
        HOLD_STREAM_CHANGE(h, h->vdeps.n = h->taint.n = 0);
        prophet_hold_stream_touched(h);
        h->flags_known = 0; /* the handle may be reused for another stream */
    }
    prophet_hold_rearm();
    HOLD_UNLOCK();
    prophet_hold_depset_free(&open);
    return 0;
}

void prophet_hold_stream_created(CUstream s, unsigned flags)
{
    hold_stream_t *h;

    if (!s || prophet_hold_inside() || prophet_hold_forked)
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
