/* Events waited on where the engine cannot see (docs/completion-holding.md, "Interprocess events"
 * and "Events ordered out of the engine's sight"): interprocess events (their records are never
 * virtual; an exported virtual record is made real), making an event's record real (context-wide
 * and EXTERNAL waits), context-wide records, graph event nodes and graph launches, events recorded
 * by launches (cuLaunchKernelEx's attributes) and EXTERNAL records. */
#include "holding/hold_special_events.h"

#include <stdlib.h>
#include <time.h>

#include "holding/holding.h"
#include "holding/hold_tables.h"
#include "holding/hold_event_set.h"
#include "holding/hold_gates.h"
#include "debug_lines/log_line.h"
#include "config/process_config.h"

/* ---- interprocess events (docs/completion-holding.md, "Interprocess events") -----------------
 * An event made with CU_EVENT_INTERPROCESS, or opened by cuIpcOpenEventHandle, may be waited on by
 * another process, which never sees a virtual record: its records are always real. The set of
 * such handles has its own lock (a leaf: taken under the engine lock, never the other way round),
 * and is looked up only while prophet_hold_nipc_ is nonzero. */

atomic_int prophet_hold_nipc_;
static hold_evset_t hold_ipcs = HOLD_EVSET_INIT(&prophet_hold_nipc_);
static atomic_int hold_ipcs_warned;

void prophet_hold_ipc_event(CUevent e)
{
    if (!e || prophet_hold_engine.forked) /* a forked child's engine is off: every record real */
        return;
    prophet_hold_fork_guard();
    /* not remembered: every record is then real (the set answers "has" for every handle) */
    if (prophet_hold_evset_add(&hold_ipcs, e) != 0 && !atomic_exchange(&hold_ipcs_warned, 1))
        prophet_msg(PROPHET_LOG_WARN, "out of memory remembering an interprocess event: "
                                      "every event record is made real from now on");
}

void prophet_hold_ipc_forget(CUevent e)
{
    if (prophet_hold_engine.forked)
        return;
    prophet_hold_evset_forget(&hold_ipcs, e);
}

int prophet_hold_ipc_has(CUevent e)
{
    return prophet_hold_evset_has(&hold_ipcs, e);
}

/* Releases the open blocks among a and b at this program-order point (another thread's block is
 * waited for, as at a host synchronisation: a GPU gate waits for released blocks only). Called
 * locked; drops the lock around each release. */
static void hold_release_behind(const hold_depset_t *a, const hold_depset_t *b)
{
    hold_depset_t open = {0};

    prophet_hold_collect_open(a, &open);
    prophet_hold_collect_open(b, &open);
    prophet_hold_release_or_wait(open.d, open.n);
    prophet_hold_depset_free(&open);
}

/* A record of interprocess event e on h (engine lock held; the driver records e after it). The
 * other process may synchronise on e, which the engine cannot see: as at a host synchronisation
 * (H6) the open blocks that h is behind are released here, a program-order point of their
 * issuing thread (another thread's block is waited for, as a host synchronisation on another
 * thread waits: a GPU gate waits for released blocks only, hold_gates.c), then h really waits for
 * them and the record is real, behind the gates. */
void prophet_hold_ipc_record(hold_stream_t *h, CUevent e)
{
    hold_rec_t *r;

    hold_release_behind(&h->vdeps, &h->taint);
    prophet_hold_stream_prune(h);
    prophet_hold_materialise(h);
    r = prophet_hold_rec_find(e);
    if (h->taint.n > 0 && (r || (r = prophet_hold_rec_get(e)) != NULL))
        (void)prophet_hold_depset_copy(&r->taint, &h->taint); /* a real record behind a gate */
    else if (r)
        prophet_hold_rec_settle(r);
}

void prophet_hold_ipc_export(CUevent e)
{
    static atomic_int warned;
    hold_rec_t *r;

    if (prophet_hold_skip())
        return;
    HOLD_LOCK();
    r = prophet_hold_rec_find(e);
    if (r && r->virt) {
        /* made real as at its record (above): its blocks released, then behind gates */
        hold_release_behind(&r->deps, &r->taint); /* a release issues it on X when it can */
        if ((r = prophet_hold_rec_find(e)) != NULL && r->virt) {
            prophet_hold_enter();
            prophet_hold_rec_issue_on_stream(r);
            prophet_hold_leave();
            prophet_hold_rec_issued(r);
        }
        if (!atomic_exchange(&warned, 1))
            prophet_msg(PROPHET_LOG_WARN,
                        "cuIpcGetEventHandle: event %p was recorded virtually behind a held "
                        "all-reduce (its creation with CU_EVENT_INTERPROCESS was not seen: an "
                        "unwrapped cuEventCreate); recorded for real now, and never virtually "
                        "again",
                        (void *)e);
    }
    prophet_hold_rearm();
    HOLD_UNLOCK();
}

/* ---- context-wide records and waits, graph event nodes, events recorded by
 * launches, EXTERNAL flags (holding.h) -------------------------------------------------------- */

/* Every event named by a graph event node (or an EXTERNAL record or wait), until its
 * cuEventDestroy: a set like the interprocess events' (its own leaf lock), counted in
 * prophet_hold_ngraph_. */
atomic_int prophet_hold_ngraph_;
static hold_evset_t hold_graph_events = HOLD_EVSET_INIT(&prophet_hold_ngraph_);

/* Makes e's record real (locked; drops the lock around releases). */
static void hold_event_make_real_locked(CUevent e)
{
    hold_rec_t *r = prophet_hold_rec_find(e);

    if (!r || (!r->virt && r->taint.n == 0))
        return;
    hold_release_behind(&r->deps, &r->taint); /* the releases issue the record (on X) */
    if ((r = prophet_hold_rec_find(e)) != NULL && r->virt)
        /* not issued by a release: behind gates on its own stream */
        prophet_hold_materialise(r->s);
}

void prophet_hold_event_make_real(CUevent e)
{
    if (prophet_hold_skip())
        return;
    HOLD_LOCK();
    hold_event_make_real_locked(e);
    prophet_hold_rearm();
    HOLD_UNLOCK();
}

/* Waits on the host until every block in s has completed on the GPU. */
static void hold_wait_complete(const hold_depset_t *s)
{
    long ns = 20 * 1000;

    for (int i = 0; i < s->n; i++)
        while (!prophet_hold_complete(&s->d[i])) {
            struct timespec ts = {0, ns};
            nanosleep(&ts, NULL);
            ns = ns < 1000 * 1000 ? 2 * ns : ns;
        }
}

/* Releases every open block (by its issuing thread; another thread's is waited for). Locked. */
static void hold_release_all(void)
{
    hold_depset_t open = {0};

    for (hold_comm_t *hc = prophet_hold_engine.comm_all; hc; hc = hc->all_next)
        if (hc->open_gen && prophet_hold_dep_add(&open, hc->c, hc->open_gen) != 0)
            prophet_msg(PROPHET_LOG_WARN, "out of memory collecting the held blocks to release");
    prophet_hold_release_or_wait(open.d, open.n);
    for (int b = 0; prophet_hold_engine.nlive_streams > 0 && b < HOLD_STREAM_BUCKETS; b++)
        for (hold_stream_t *h = prophet_hold_engine.streams[b]; h; h = h->next)
            prophet_hold_stream_prune(h);
    prophet_hold_depset_free(&open);
}

void prophet_hold_ctx_record(CUevent e)
{
    hold_depset_t done = {0};
    hold_rec_t *r;

    if (prophet_hold_skip())
        return;
    HOLD_LOCK();
    hold_release_all(); /* every open block released (by its thread; others waited for) */
    for (hold_comm_t *hc = prophet_hold_engine.comm_all; hc; hc = hc->all_next)
        if (hc->released && !prophet_hold_complete(&(hold_dep_t){hc->c, hc->released}))
            prophet_hold_dep_add(&done, hc->c, hc->released);
    /* records still virtual (a release that could not issue them): behind gates on their stream */
    while (prophet_hold_engine.virt_head) {
        hold_rec_t *v = prophet_hold_engine.virt_head;
        prophet_hold_materialise(v->s);
        if (prophet_hold_engine.virt_head == v) /* not issued (out of memory): do not spin */
            break;
    }
    if ((r = prophet_hold_rec_find(e)) != NULL) { /* the driver's record replaces it */
        prophet_hold_rec_unvirt(r);
        r->taint.n = 0;
        prophet_hold_rec_settle(r);
    }
    prophet_hold_rearm();
    HOLD_UNLOCK();
    hold_wait_complete(&done); /* the context's record must cover the all-reduces run on X */
    prophet_hold_depset_free(&done);
}

void prophet_hold_graph_event(CUevent e)
{
    if (!e || prophet_hold_engine.forked || prophet_hold_inside())
        return;
    prophet_hold_fork_guard();
    if (prophet_hold_evset_add(&hold_graph_events, e) != 0)
        prophet_msg(PROPHET_LOG_WARN, "out of memory: a graph's event node is not tracked");
}

void prophet_hold_graph_forget(CUevent e)
{
    if (prophet_hold_engine.forked)
        return;
    prophet_hold_evset_forget(&hold_graph_events, e);
}

void prophet_hold_graph_launch(CUstream s, int ptsz)
{
    CUevent *ev;
    int n;

    if (prophet_hold_skip())
        return;
    HOLD_LOCK();
    /* a copy: the engine lock is dropped inside (the set's own lock is a leaf) */
    if ((n = prophet_hold_evset_list(&hold_graph_events, &ev)) < 0)
        prophet_msg(PROPHET_LOG_WARN, "out of memory: the graph events' records are not made "
                                      "real before a graph launch");
    for (int i = 0; i < n; i++)
        hold_event_make_real_locked(ev[i]);
    free(ev);
    prophet_hold_rearm();
    HOLD_UNLOCK();
    prophet_hold_work(s, ptsz, 1);
}

void prophet_hold_event_recorded(CUevent e, CUstream s, int ptsz)
{
    hold_stream_t *h;
    hold_rec_t *r;

    if (!e || prophet_hold_skip())
        return;
    HOLD_LOCK();
    h = prophet_hold_stream(s, ptsz);
    if ((r = prophet_hold_rec_find(e)) != NULL) { /* replaced by the launch's record */
        prophet_hold_rec_unvirt(r);
        r->taint.n = 0;
    }
    if (h && h->taint.n > 0 && (r = r ? r : prophet_hold_rec_get(e)) != NULL)
        (void)prophet_hold_depset_copy(&r->taint, &h->taint); /* behind a gate on an open block */
    if (r)
        prophet_hold_rec_settle(r);
    prophet_hold_rearm();
    HOLD_UNLOCK();
}

void prophet_hold_record_external(CUevent e, CUstream s, int ptsz)
{
    (void)e; /* a graph event already (cuda_hooks.c, FIRST_RECORD) */
    if (!prophet_hold_skip())
        prophet_hold_work(s, ptsz, 1);
}

void prophet_hold_wait_external(CUevent e)
{
    prophet_hold_event_make_real(e); /* a graph event already (cuda_hooks.c, FIRST_WAIT) */
}
