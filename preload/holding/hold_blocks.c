/* The per-communicator engine's side of the holding engine (docs/completion-holding.md, H1, H7
 * and 8; holding.h, "the scheduler's side"): before a call is held, the open blocks of other
 * communicators that its stream is behind are released (H7); whether a call may join its
 * communicator's open block (H7); a held call (H1); a released block, and the virtual
 * records issued behind it (H8). */
#include <stdlib.h>

#include "comm.h"
#include "holding/holding.h"
#include "holding/hold_tables.h"
#include "holding/hold_gates.h"
#include "real_libs/cuda_driver.h"
#include "debug_lines/log_line.h"
#include "config/process_config.h"

/* Before a call on comm c is held on stream st (comm lock NOT held): every open block of another
 * communicator that st is behind is released first, and st really waits for them, so that a held
 * member never depends on an open block (no cycle between communicators). */
void prophet_hold_before_call(prophet_comm_t *c, CUstream st)
{
    hold_depset_t open = {0};
    hold_stream_t *h;
    prophet_comm_t *only = atomic_load(&prophet_hold_engine.dep_comm);

    /* nothing of another communicator was ever held: st cannot be behind one */
    if (!prophet_hold_armed() || only == NULL || only == c || prophet_hold_engine.forked)
        return;
    HOLD_LOCK();
    if ((h = prophet_hold_stream(st, 0)) != NULL) {
        for (int i = 0; i < h->vdeps.n; i++)
            if (h->vdeps.d[i].c != c && prophet_hold_is_open(&h->vdeps.d[i]))
                prophet_hold_dep_add(&open, h->vdeps.d[i].c, h->vdeps.d[i].gen);
        for (int i = 0; i < h->taint.n; i++)
            if (h->taint.d[i].c != c && prophet_hold_is_open(&h->taint.d[i]))
                prophet_hold_dep_add(&open, h->taint.d[i].c, h->taint.d[i].gen);
        prophet_hold_release_or_wait(open.d, open.n);
        /* dependencies on other communicators' (released) blocks become real now */
        int other = 0;
        for (int i = 0; i < h->vdeps.n; i++)
            other |= h->vdeps.d[i].c != c;
        if (other) {
            hold_depset_t mine = {0};
            for (int i = 0; i < h->vdeps.n; i++)
                if (h->vdeps.d[i].c == c)
                    prophet_hold_dep_add(&mine, c, h->vdeps.d[i].gen);
            HOLD_STREAM_CHANGE(h, {
                for (int i = h->vdeps.n; i-- > 0;)
                    if (h->vdeps.d[i].c == c)
                        prophet_hold_dep_del(&h->vdeps, i);
            });
            prophet_hold_materialise(h);
            HOLD_STREAM_CHANGE(h, {
                prophet_hold_depset_free(&h->vdeps);
                h->vdeps = mine;
            });
        }
    }
    prophet_hold_rearm();
    HOLD_UNLOCK();
    prophet_hold_depset_free(&open);
}

/* Rule 7: may a call on st join c's open block (generation gen)? Not when st is materially
 * behind it (real work on st may have read a held result). Comm lock held. */
int prophet_hold_may_join(prophet_comm_t *c, CUstream st, uint32_t gen)
{
    CUstream key, real;
    int legacy, perthread, ok = 1;
    hold_stream_t *h;

    if (!atomic_load(&prophet_hold_engine.any_taint) ||
        prophet_hold_engine.forked) /* no stream materially behind a block */
        return 1;
    HOLD_LOCK();
    prophet_hold_stream_norm(st, 0, &key, &real, &legacy, &perthread);
    if ((h = prophet_hold_stream_lookup(key)) != NULL) {
        if (h->legacy || h->blocking)
            h = prophet_hold_stream(st, 0);
        for (int i = 0; h && i < h->taint.n; i++)
            if (h->taint.d[i].c == c && prophet_hold_gen_before(gen, h->taint.d[i].gen))
                ok = 0;
    }
    HOLD_UNLOCK();
    return ok;
}

/* A call was held on st in c's open block gen (its ready event was just recorded on st). */
/* Keeps [p, p + bytes) among the open block's buffers (one range for both when they are the same).
 */
static void hold_range_add(hold_comm_t *hc, const void *p, size_t bytes)
{
    uintptr_t lo = (uintptr_t)p, hi = lo + (bytes ? bytes : 1);

    for (int i = 0; i < hc->nrange && i < HOLD_RANGES_MAX; i++)
        if (hc->range[i][0] == lo && hc->range[i][1] == hi)
            return;
    if (hc->nrange < HOLD_RANGES_MAX) {
        hc->range[hc->nrange][0] = lo;
        hc->range[hc->nrange][1] = hi;
    }
    hc->nrange++;
}

void prophet_hold_call_held(prophet_comm_t *c, CUstream st, uint32_t gen, const void *send,
                            const void *recv, size_t bytes)
{
    hold_comm_t *hc;
    hold_stream_t *h;

    if (prophet_hold_engine.forked)
        return;
    prophet_hold_fork_guard();
    HOLD_LOCK();
    hc = prophet_hold_comm(c);
    h = prophet_hold_stream(st, 0);
    if (hc && !hc->open_gen) {
        hc->open_gen = gen;
        hc->owner = pthread_self();
        hc->stream = h ? h->key : NULL;
        hc->nrange = 0;
        prophet_hold_engine.nopen++;
    }
    if (hc) {
        hold_range_add(hc, send, bytes);
        hold_range_add(hc, recv, bytes);
    }
    prophet_hold_entries_++; /* a poll of an earlier record is no poll across a held call */
    if (h) {
        HOLD_STREAM_CHANGE(h, {
            if (prophet_hold_dep_add(&h->vdeps, c, gen) != 0)
                prophet_msg(PROPHET_LOG_WARN, "out of memory: a held call's stream is not "
                                              "tracked behind it");
        });
        prophet_hold_stream_touched(h);
        h->cover_c = c;
        h->cover_gen = gen;
    }
    prophet_hold_rearm();
    HOLD_UNLOCK();
}

/* Issues virtual record r on X after block (c, gen) when nothing else holds it back. */
static void hold_rec_release(hold_rec_t *r, prophet_comm_t *c, int ok)
{
    CUresult rc = CUDA_SUCCESS;

    for (int i = 0; i < r->deps.n; i++)
        if (!prophet_hold_is_released(&r->deps.d[i]))
            return; /* still behind another open block */
    prophet_hold_taint_prune(&r->taint);
    if (ok && c->gpu.internal_stream && r->taint.n == 0) {
        /* on X, after the block: the other blocks (released), the recording stream's prefix */
        for (int i = 0; i < r->deps.n && rc == CUDA_SUCCESS; i++)
            if (r->deps.d[i].c != c)
                rc = prophet_hold_gate(c->gpu.internal_stream, &r->deps.d[i]);
        if (rc == CUDA_SUCCESS && r->sh)
            rc = prophet_cu.StreamWaitEvent(c->gpu.internal_stream, r->sh->ev, 0);
        if (rc == CUDA_SUCCESS)
            rc = prophet_cu.EventRecord(r->ev, c->gpu.internal_stream);
        if (rc == CUDA_SUCCESS) {
            prophet_hold_rec_issued(r);
            return;
        }
    }
    prophet_hold_rec_issue_on_stream(r); /* behind real gates on its own stream */
    prophet_hold_rec_issued(r);
}

/* Block gen of c was released: PROPHET_HOLD_ON_X (its generation written on X after it),
 * PROPHET_HOLD_ON_STREAM (launched on the members' stream, generation written there) or
 * PROPHET_HOLD_DROPPED (the gate word is opened here, from the host). Comm lock held, inside the
 * preload. */
void prophet_hold_block_released(prophet_comm_t *c, uint32_t gen, int how)
{
    int ok = how == PROPHET_HOLD_ON_X;
    hold_comm_t *hc;

    HOLD_LOCK();
    hc = prophet_hold_comm(c);
    if (hc && hc->open_gen) {
        hc->open_gen = 0;
        prophet_hold_engine.nopen--;
    }
    if (hc)
        hc->released = gen;
    if (how == PROPHET_HOLD_DROPPED && c->gpu.gate_host) /* a gated stream must never hang */
        __atomic_store_n(c->gpu.gate_host, gen, __ATOMIC_RELEASE);
    /* taints on this block are over: the gates stay on the GPU (no stream with a dependency or
     * a taint: nothing to prune, and no walk over every bucket per block) */
    for (int b = 0; prophet_hold_engine.nlive_streams > 0 && b < HOLD_STREAM_BUCKETS; b++)
        for (hold_stream_t *h = prophet_hold_engine.streams[b]; h; h = h->next)
            HOLD_STREAM_CHANGE(h, {
                prophet_hold_taint_prune(&h->taint);
                prophet_hold_vdeps_prune(&h->vdeps);
            });
    for (hold_rec_t *r = prophet_hold_engine.virt_head, *n; r; r = n) {
        n = r->vnext;
        for (int i = 0; i < r->deps.n; i++)
            if (r->deps.d[i].c == c) {
                hold_rec_release(r, c, ok);
                break;
            }
    }
    /* records that are not virtual but still carry a taint (none: no walk) */
    for (int b = 0;
         prophet_hold_engine.nlive_recs > prophet_hold_engine.nvirt && b < HOLD_EVENT_BUCKETS; b++)
        for (hold_rec_t *r = prophet_hold_engine.recs[b], *n; r; r = n) {
            n = r->next;
            if (!r->virt)
                prophet_hold_rec_settle(r);
        }
    prophet_hold_rearm();
    pthread_cond_broadcast(&prophet_hold_engine.cond);
    HOLD_UNLOCK();
}
