/* Events waited on where the engine cannot see (docs/completion-holding.md, "Interprocess events"
 * and "The entry points of issue 37, item 3"): interprocess events (their records are never
 * virtual; an exported virtual record is made real), making an event's record real (context-wide
 * and EXTERNAL waits), context-wide records, graph event nodes and graph launches, events recorded
 * by launches (cuLaunchKernelEx's attributes) and EXTERNAL records. */
#include "holding/hold_special_events.h"

#include <stdlib.h>
#include <time.h>

#include "holding/holding.h"
#include "holding/hold_tables.h"
#include "holding/hold_gates.h"
#include "debug_log/log_line.h"
#include "config/process_config.h"

/* ---- interprocess events (docs/completion-holding.md, "Interprocess events") -----------------
 * An event made with CU_EVENT_INTERPROCESS, or opened by cuIpcOpenEventHandle, may be waited on by
 * another process, which never sees a virtual record: its records are always real. The set of
 * such handles has its own lock (a leaf: taken under the engine lock, never the other way round),
 * and is looked up only while prophet_hold_nipc_ is nonzero. */

#define HOLD_IPC_BUCKETS 256

typedef struct hold_ipc {
    struct hold_ipc *next;
    CUevent ev;
} hold_ipc_t;

atomic_int prophet_hold_nipc_;
static pthread_mutex_t hold_ipc_lock = PTHREAD_MUTEX_INITIALIZER;
static hold_ipc_t *hold_ipcs[HOLD_IPC_BUCKETS];
/* An interprocess event could not be remembered (out of memory): every record is then real. */
static atomic_int hold_ipc_untracked;

static hold_ipc_t **hold_ipc_slot(CUevent e)
{
    hold_ipc_t **p = &hold_ipcs[prophet_hold_hash_ptr(e, HOLD_IPC_BUCKETS)];

    while (*p && (*p)->ev != e)
        p = &(*p)->next;
    return p;
}

void prophet_hold_ipc_event(CUevent e)
{
    hold_ipc_t **p, *x;

    if (!e || prophet_hold_forked) /* a forked child's engine is off: every record real */
        return;
    prophet_hold_fork_guard();
    pthread_mutex_lock(&hold_ipc_lock);
    p = hold_ipc_slot(e);
    if (!*p) {
        if ((x = calloc(1, sizeof(*x))) != NULL) {
            x->ev = e;
            *p = x;
            atomic_fetch_add(&prophet_hold_nipc_, 1);
        } else if (!atomic_exchange(&hold_ipc_untracked, 1)) {
            atomic_fetch_add(&prophet_hold_nipc_, 1); /* keeps every record looking */
            prophet_msg(PROPHET_LOG_WARN, "out of memory remembering an interprocess event: "
                                          "every event record is made real from now on");
        }
    }
    pthread_mutex_unlock(&hold_ipc_lock);
}

void prophet_hold_ipc_forget(CUevent e)
{
    hold_ipc_t **p, *x;

    if (prophet_hold_forked)
        return;
    pthread_mutex_lock(&hold_ipc_lock);
    p = hold_ipc_slot(e);
    if ((x = *p) != NULL) {
        *p = x->next;
        free(x);
        atomic_fetch_sub(&prophet_hold_nipc_, 1);
    }
    pthread_mutex_unlock(&hold_ipc_lock);
}

int prophet_hold_ipc_has(CUevent e)
{
    int has;

    if (!atomic_load_explicit(&prophet_hold_nipc_, memory_order_relaxed))
        return 0; /* no interprocess event in the process: the common case, no lookup */
    if (atomic_load_explicit(&hold_ipc_untracked, memory_order_relaxed))
        return 1;
    pthread_mutex_lock(&hold_ipc_lock);
    has = *hold_ipc_slot(e) != NULL;
    pthread_mutex_unlock(&hold_ipc_lock);
    return has;
}

/* Adds the open blocks among `s` that this thread issued (it may release them) to `out`. Called
 * locked. */
static void hold_collect_own(const hold_depset_t *s, hold_depset_t *out)
{
    pthread_t self = pthread_self();

    for (int i = 0; i < s->n; i++) {
        hold_comm_t *hc = prophet_hold_comm(s->d[i].c);
        if (hc && prophet_hold_is_open(&s->d[i]) && pthread_equal(hc->owner, self) &&
            prophet_hold_dep_add(out, s->d[i].c, s->d[i].gen) != 0)
            prophet_msg(PROPHET_LOG_WARN, "out of memory collecting the held blocks to release");
    }
}

/* A record of interprocess event e on h (engine lock held; the driver records e after it). The
 * other process may synchronise on e, which the engine cannot see: as at a host synchronisation
 * (rule 6) the open blocks that h is behind and that this thread issued are released here, a
 * program-order point, so that no process waits for a block that only a later call of this
 * thread would close. The blocks of other threads are not waited for (a record never blocks the
 * host): h gets GPU gates on every block it is behind (rule 4; an open one then taints h and the
 * record), and the record is real, behind them. */
void prophet_hold_ipc_record(hold_stream_t *h, CUevent e)
{
    hold_depset_t own = {0};
    hold_rec_t *r;

    hold_collect_own(&h->vdeps, &own);
    hold_collect_own(&h->taint, &own);
    prophet_hold_release_or_wait(own.d, own.n); /* drops the engine lock around each release */
    prophet_hold_depset_free(&own);
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
    hold_depset_t own = {0};
    hold_rec_t *r;

    if (prophet_hold_skip())
        return;
    HOLD_LOCK();
    r = prophet_hold_rec_find(e);
    if (r && r->virt) {
        /* made real as at its record (above): its own blocks released, then behind gates */
        hold_collect_own(&r->deps, &own);
        hold_collect_own(&r->taint, &own);
        /* a release issues it on X when nothing else does */
        prophet_hold_release_or_wait(own.d, own.n);
        prophet_hold_depset_free(&own);
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

/* ---- issue 37, item 3: context-wide records and waits, graph event nodes, events recorded by
 * launches, EXTERNAL flags (holding.h) -------------------------------------------------------- */

static CUevent *hold_graph_events; /* every event named by a graph event node (never shrinks) */
static int hold_graph_nevents, hold_graph_cap;

/* Makes e's record real (locked; drops the lock around releases). */
static void hold_event_make_real_locked(CUevent e)
{
    hold_depset_t open = {0};
    hold_rec_t *r = prophet_hold_rec_find(e);

    if (!r || (!r->virt && r->taint.n == 0))
        return;
    prophet_hold_collect_open(&r->deps, &open);
    prophet_hold_collect_open(&r->taint, &open);
    prophet_hold_release_or_wait(open.d, open.n); /* the releases issue the record (on X) */
    prophet_hold_depset_free(&open);
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

void prophet_hold_ctx_record(CUevent e)
{
    hold_depset_t done = {0};
    hold_rec_t *r;

    if (prophet_hold_skip())
        return;
    prophet_hold_ctx_sync(); /* every open block released (by its thread; others waited for) */
    HOLD_LOCK();
    for (hold_comm_t *hc = prophet_hold_comm_all; hc; hc = hc->all_next)
        if (hc->released && !prophet_hold_complete(&(hold_dep_t){hc->c, hc->released}))
            prophet_hold_dep_add(&done, hc->c, hc->released);
    /* records still virtual (a release that could not issue them): behind gates on their stream */
    while (prophet_hold_virt_head) {
        hold_rec_t *v = prophet_hold_virt_head;
        prophet_hold_materialise(v->s);
        if (prophet_hold_virt_head == v) /* not issued (out of memory): do not spin */
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
    if (!e || prophet_hold_forked || prophet_hold_inside())
        return;
    prophet_hold_fork_guard();
    HOLD_LOCK();
    int known = 0;
    for (int i = 0; i < hold_graph_nevents && !known; i++)
        known = hold_graph_events[i] == e;
    if (!known && hold_graph_nevents == hold_graph_cap) {
        int cap = hold_graph_cap ? 2 * hold_graph_cap : 16;
        CUevent *p = realloc(hold_graph_events, (size_t)cap * sizeof(*p));
        if (p) {
            hold_graph_events = p;
            hold_graph_cap = cap;
        }
    }
    if (!known && hold_graph_nevents < hold_graph_cap)
        hold_graph_events[hold_graph_nevents++] = e;
    else if (!known)
        prophet_msg(PROPHET_LOG_WARN, "out of memory: a graph's event node is not tracked");
    HOLD_UNLOCK();
}

void prophet_hold_graph_launch(CUstream s, int ptsz)
{
    if (prophet_hold_skip())
        return;
    HOLD_LOCK();
    for (int i = 0; i < hold_graph_nevents; i++) /* the lock is dropped inside: index, re-read */
        hold_event_make_real_locked(hold_graph_events[i]);
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
