/* What the wrappers enqueue on a stream (docs/completion-holding.md, H2, H3 and H4): an event
 * record, which becomes virtual on a stream behind an open block (H2; never for an interprocess
 * event: "Interprocess events"), a stream wait, which absorbs a virtual record (H3; with one
 * another thread's open block it first waits on the host for its release: hold_gates.c), and real
 * work, the wrappers' and the preload's own (H4). */
#include <stdlib.h>

#include "holding/holding.h"
#include "holding/hold_tables.h"
#include "holding/hold_gates.h"
#include "holding/hold_special_events.h"
#include "real_libs/cuda_driver.h"
#include "debug_lines/log_line.h"
#include "config/process_config.h"

/* A shadow of stream h: an engine event recorded on it now (its real prefix), carrying the open
 * blocks h is materially behind, with one reference (the stream's). NULL, with one WARN, when no
 * event could be had or recorded. */
static hold_shadow_t *hold_shadow_new(hold_stream_t *h)
{
    hold_shadow_t *sh = calloc(1, sizeof(*sh));
    CUresult rc = CUDA_ERROR_OUT_OF_MEMORY;

    prophet_hold_enter();
    if (sh && (sh->ev = prophet_hold_event_get()) != NULL &&
        (rc = prophet_cu.EventRecord(sh->ev, h->real)) == CUDA_SUCCESS) {
        sh->refs = 1;
        (void)prophet_hold_depset_copy(&sh->taint, &h->taint);
    } else {
        if (sh && sh->ev)
            prophet_hold_event_put(sh->ev);
        free(sh);
        sh = NULL;
    }
    prophet_hold_leave();
    if (!sh)
        prophet_msg(PROPHET_LOG_WARN, "recording a stream's prefix failed (%s)",
                    prophet_cuda_errstr(rc));
    return sh;
}

int prophet_hold_event_record(CUevent e, CUstream s, int ptsz, CUresult *rc)
{
    hold_stream_t *h;
    hold_rec_t *r;
    int handled = 0;

    if (prophet_hold_skip())
        return 0;
    HOLD_LOCK();
    if (!(h = prophet_hold_stream(s, ptsz)))
        goto out;
    /* counted: a stream left without dependencies is no longer live */
    prophet_hold_stream_prune(h);
    r = prophet_hold_rec_find(e);
    if (r) { /* a new record of the handle replaces the old one */
        prophet_hold_rec_unvirt(r);
        r->taint.n = 0;
    }
    if (prophet_hold_ipc_has(e)) { /* another process may wait on it: never virtual */
        prophet_hold_ipc_record(h, e);
        goto out;
    }
    if (h->vdeps.n > 0 && !prophet_hold_dep_has_open(&h->vdeps)) {
        /* behind released blocks only: really wait for them (cheap) and record for real */
        prophet_hold_materialise(h);
    }
    if (h->vdeps.n == 0) {
        if (h->taint.n > 0 && (r = r ? r : prophet_hold_rec_get(e)) != NULL)
            (void)prophet_hold_depset_copy(&r->taint, &h->taint); /* a real record behind a gate */
        if (r)
            prophet_hold_rec_settle(r);
        goto out;
    }
    if (!(r = r ? r : prophet_hold_rec_get(e))) {
        prophet_hold_materialise(h); /* out of memory: make it real */
        goto out;
    }
    /* virtual: nothing reaches the driver (but the stream's real prefix, unless covered) */
    if (prophet_hold_depset_copy(&r->deps, &h->vdeps) ||
        prophet_hold_depset_copy(&r->taint, &h->taint)) {
        r->deps.n = 0;
        prophet_hold_materialise(h); /* out of memory: make it real */
        prophet_hold_rec_settle(r);
        goto out;
    }
    r->s = h;
    r->sh = NULL;
    if (!prophet_hold_covered(h)) {
        if (!h->shadow && !(h->shadow = hold_shadow_new(h))) {
            prophet_hold_materialise(h);
            prophet_hold_rec_settle(r);
            goto out; /* the driver records it for real */
        }
        r->sh = h->shadow;
        r->sh->refs++;
    }
    prophet_hold_rec_virt(r);
    *rc = CUDA_SUCCESS;
    handled = 1;
out:
    prophet_hold_rearm();
    HOLD_UNLOCK();
    return handled;
}

/* A stream may not become virtually behind another thread's open block. Its thread could later
 * gate it on that block from the preload's own path (an NCCL call inside a user group, with the
 * comm lock held, cannot release another thread's block), and the gate would sit ahead of the
 * block's launch in a shared hardware queue (hold_gates.c). So a wait on a virtual record of
 * another thread's open blocks waits on the host for their release here, where no comm lock is
 * held, as a host synchronisation does (H6). Called locked; drops the lock while it waits. */
static void hold_wait_foreign(CUevent e)
{
    hold_depset_t foreign = {0};
    hold_rec_t *r = prophet_hold_rec_find(e);
    pthread_t self = pthread_self();

    if (!r || !r->virt)
        return;
    for (int i = 0; i < r->deps.n; i++) {
        hold_comm_t *hc = prophet_hold_comm(r->deps.d[i].c);
        if (hc && prophet_hold_is_open(&r->deps.d[i]) && !pthread_equal(hc->owner, self) &&
            prophet_hold_dep_add(&foreign, r->deps.d[i].c, r->deps.d[i].gen) != 0)
            prophet_msg(PROPHET_LOG_WARN, "out of memory collecting the held blocks to wait for");
    }
    if (foreign.n)
        prophet_hold_release_or_wait(foreign.d, foreign.n);
    prophet_hold_depset_free(&foreign);
}

int prophet_hold_stream_wait_event(CUstream s, CUevent e, int ptsz, CUresult *rc)
{
    hold_stream_t *h;
    hold_rec_t *r;
    int handled = 0;

    if (prophet_hold_skip())
        return 0;
    HOLD_LOCK();
    hold_wait_foreign(e); /* before the stream is looked up: drops the lock */
    if (!(h = prophet_hold_stream(s, ptsz)))
        goto out;
    r = prophet_hold_rec_find(e);
    if (r)
        prophet_hold_rec_settle(r);
    r = prophet_hold_rec_find(e);
    if (r && r->virt) {
        int full = 0;
        HOLD_STREAM_CHANGE(h, {
            for (int i = 0; i < r->deps.n; i++)
                full |= prophet_hold_dep_add(&h->vdeps, r->deps.d[i].c, r->deps.d[i].gen) != 0;
            for (int i = 0; i < r->taint.n; i++)
                full |= prophet_hold_dep_add(&h->taint, r->taint.d[i].c, r->taint.d[i].gen) != 0;
        });
        *rc = CUDA_SUCCESS;
        prophet_hold_stream_touched(h);
        if (r->sh) {
            prophet_hold_enter();
            *rc = prophet_cu.StreamWaitEvent(h->real, r->sh->ev, 0);
            prophet_hold_leave();
        }
        if (full) { /* more communicators than the set holds: wait for real */
            prophet_hold_materialise(h);
            prophet_hold_enter();
            prophet_hold_rec_issue_on_stream(r);
            prophet_hold_rec_issued(r);
            *rc = prophet_cu.StreamWaitEvent(h->real, e, 0);
            prophet_hold_leave();
        }
        handled = 1;
        goto out;
    }
    prophet_hold_stream_touched(h);
    if (r && r->taint.n > 0)
        HOLD_STREAM_CHANGE(h, {
            for (int i = 0; i < r->taint.n; i++)
                prophet_hold_dep_add(&h->taint, r->taint.d[i].c, r->taint.d[i].gen);
        });
out:
    prophet_hold_rearm();
    HOLD_UNLOCK();
    return handled;
}

void prophet_hold_stream_work(CUstream s, int ptsz)
{
    if (prophet_hold_skip())
        return;
    prophet_hold_work(s, ptsz, 1);
}

void prophet_hold_work_own(CUstream s, int ptsz)
{
    prophet_hold_work(s, ptsz, 0);
}

void prophet_hold_forward_work(CUstream s, int ptsz)
{
    prophet_hold_work(s, ptsz, 1);
}
