/* One intercepted ncclAllReduce: observe it (learner, signature sequence, agreement points) and
 * then, by gate mode, launch it at once (observe) or hold it in the comm's pending block (hold:
 * its completion is held, the holding engine, preload/holding/, keeps every consumer exact).
 * Every decision here is a function of the program-order sequence of calls and of agreed plan
 * data (I1): time is only measured, never consulted. */
#include <stdlib.h>
#include <string.h>

#include "engine/schedule.h"
#include "engine/comm_state.h"
#include "engine/agreement.h"
#include "engine/iteration_samples.h"
#include "engine/comm_life.h"
#include "real_libs/cuda_driver.h"
#include "holding/holding.h"
#include "engine/group_depth.h"
#include "schedule_log/log_bridge.h"
#include "debug_lines/log_line.h"
#include "real_libs/nccl_dtype.h"
#include "real_libs/nccl_symbols.h"
#include "engine/readiness_poller.h"
#include "engine/release.h"
#include "engine/route.h"
#include "config/process_config.h"

/* One intercepted ncclAllReduce: its arguments, its stream, and its place in program order
 * (index and iteration as the learner numbers it: UINT32_MAX and 0 until it is observed). */
typedef struct prophet_call {
    const void *sendbuff;
    void *recvbuff;
    size_t count;
    ncclDataType_t dtype;
    ncclRedOp_t op;
    CUstream stream;
    int64_t arrival_us;
    uint32_t index;
    uint64_t iteration;
} prophet_call_t;

static ncclResult_t prophet_real_allreduce(const prophet_comm_t *c, const prophet_call_t *k)
{
    return prophet_nccl.AllReduce(k->sendbuff, k->recvbuff, k->count, k->dtype, k->op, c->handle,
                                  k->stream);
}

static uint64_t prophet_call_bytes(const prophet_call_t *k)
{
    return k->count * prophet_dtype_size(k->dtype);
}

/* The call as a member of a block (or the one member of an observed call's record). */
static prophet_member_t prophet_call_member(const prophet_call_t *k, CUevent ready)
{
    return (prophet_member_t){.sendbuff = k->sendbuff,
                              .recvbuff = k->recvbuff,
                              .count = k->count,
                              .dtype = k->dtype,
                              .op = k->op,
                              .ready = ready,
                              .iteration = k->iteration,
                              .index = k->index,
                              .arrival_us = k->arrival_us,
                              .measure = 0};
}

/* Calls are held only after the learned period survived this many iteration starts. The learner
 * can lock on a sub-period (a run of identical layers) during the first iterations, and a block
 * held across the true end of an iteration would be read by the job's end-of-iteration sync
 * before it ran. Such a lock breaks within one true iteration, i.e. after at most as many
 * sub-periods as the model has identical consecutive units (6 in ResNet-50, 12 in BERT-base). */
static uint32_t prophet_stable_iters_needed(void)
{
    uint32_t n = 2 * prophet_cfg.learn_iters;
    return n < 16 ? 16 : n;
}

/* Holding needs the learner's boundary to be the job's. The learner anchors every lock's phase by
 * bytes: every iteration all-reduces the same bytes, so a true boundary has a whole number of
 * iterations' bytes before it, counted from the first call (DDP's first iteration has other
 * buckets but the same bytes) or, after the job changed its sequence, from the last iteration
 * start of the lock that broke (sched/learner.c). A phase anchored otherwise may be off: then
 * nothing is held (passthrough stays exact). */
static int prophet_phase_anchored(const prophet_comm_t *c)
{
    int a = prophet_learner_anchored(c->models.learner);

    return c->order.iter_bytes > 0 &&
           (a == PROPHET_LEARN_ANCHOR_BYTES || a == PROPHET_LEARN_ANCHOR_TEMPLATE);
}

/* Learner and program-order bookkeeping: sets k's index and iteration. Returns the learner
 * flags (< 0: not schedulable). */
static int prophet_observe(prophet_comm_t *c, prophet_call_t *k, int64_t ready_us)
{
    prophet_call_sig_t sig = {.comm_id = c->id,
                              .count = k->count,
                              .dtype = (int32_t)k->dtype,
                              .op = (int32_t)k->op,
                              .bytes = prophet_call_bytes(k)};
    int flags = prophet_learner_observe(c->models.learner, &sig, ready_us, &k->index);

    k->iteration = prophet_learner_iteration(c->models.learner);
    if (flags < 0) {
        k->index = UINT32_MAX;
        return flags;
    }
    if (flags & PROPHET_LEARN_RELEARN) {
        prophet_msg(PROPHET_LOG_INFO, "comm %lu: call sequence changed; learning again",
                    (unsigned long)c->id);
        c->order.iter_len = 0;
        c->order.iter_bytes = 0;
        c->order.phase_ok = 0;
        c->order.stable_iters = 0;
        c->order.seq_n = 0;
        c->order.seq_n_last = 0;
        if (c->agree.have_plan)
            prophet_engine_set_plan(c->models.engine, NULL);
        c->agree.have_plan = 0;
        prophet_loop_reset(c);
        c->order.measured_iters = 0;
        if (prophet_cfg.gate == PROPHET_GATE_HOLD)
            c->agree.next_agree_iter = UINT64_MAX;
    }
    if (flags & PROPHET_LEARN_ITER_START) {
        /* Holding needs the learner's boundary to be the job's: every iteration all-reduces the
         * same bytes, so a true boundary has a whole number of iterations' bytes before it since
         * the first call (DDP's first iteration has other buckets but the same bytes). A phase
         * found after a relearn can be off; then nothing is held (passthrough stays exact). */
        c->order.phase_ok = prophet_phase_anchored(c);
        if (c->order.last_index != UINT32_MAX && c->order.seq_n > 0 &&
            c->order.seq_n == c->order.last_index + 1) {
            c->order.seq_n_last = c->order.seq_n;
            c->order.seq_hash_last = prophet_sig_hash(c->order.seq, c->order.seq_n);
        }
        c->order.seq_n = 0;
        c->order.block_number = 0;
        c->order.stable_iters++;
    }
    if (flags & PROPHET_LEARN_READY) {
        const prophet_profile_t *p = prophet_learner_profile(c->models.learner);
        /* Calls are held only once the profile is ready: a lock on a sub-period (identical
         * layers) breaks before it can become ready in practice, and the length of the true
         * iteration is what closes the last block before the job synchronises. */
        c->order.iter_len = p ? p->n_calls : 0;
        c->order.iter_bytes = 0;
        for (uint32_t i = 0; p && i < p->n_calls; i++)
            c->order.iter_bytes += p->sig[i].bytes;
        c->order.phase_ok = k->index == 0 && prophet_phase_anchored(c);
        /* a profile: plans will read the network (not at a mere lock: Horovod's aperiodic calls
         * lock by chance and break again) */
        prophet_poller_want_probe();
        /* first plan: agree at the next iteration start (hold mode: after measuring) */
        if (p && p->n_calls >= 2 && !c->agree.have_plan &&
            c->agree.next_agree_iter > k->iteration && prophet_cfg.gate != PROPHET_GATE_HOLD)
            c->agree.next_agree_iter = k->iteration;
        prophet_logb_profile(c);
    }
    if (flags & PROPHET_LEARN_EXTRA) {
        /* a call outside the iteration (a loss, a metric, an evaluation): not part of the agreed
         * sequence, and the iteration it falls in is no clean sample of the plan in force */
        c->stats.extras++;
        c->loop.iter_clean = 0;
        return flags;
    }
    /* the log numbers the job's steps by the bytes before each iteration start */
    prophet_logb_observed(c, k->iteration, sig.bytes, flags);
    /* comm_id is left out of the agreed hash: InitAll gives one process's ranks different ids */
    sig.comm_id = 0;
    if (k->index != UINT32_MAX && c->order.seq_n < PROPHET_MAX_CALLS)
        c->order.seq[c->order.seq_n++] = sig;
    c->order.last_index = k->index;
    return flags;
}

/* Unsettled bookkeeping (schedule.h), hold mode, after the learner saw the call: program-order
 * data only (the same on every rank, though it changes nothing that reaches NCCL). */
static void prophet_unsettled_step(prophet_comm_t *c, const prophet_call_t *k, int flags)
{
    prophet_comm_order_t *o = &c->order;

    if (prophet_cfg.gate != PROPHET_GATE_HOLD)
        return;
    if (c->agree.have_plan) {
        if (o->unsettled)
            prophet_msg(PROPHET_LOG_INFO,
                        "comm %lu iteration %lu: a plan is agreed; observing "
                        "every call again until it is in force",
                        (unsigned long)c->id, (unsigned long)k->iteration);
        o->unplanned_search = o->unplanned_relearns = 0;
        o->unsettled = 0;
        return;
    }
    if (o->unsettled)
        return;
    if (k->index == UINT32_MAX && !(flags >= 0 && (flags & PROPHET_LEARN_EXTRA)))
        o->unplanned_search++;
    if (flags >= 0 && (flags & PROPHET_LEARN_RELEARN))
        o->unplanned_relearns++;
    if (o->unplanned_search < PROPHET_UNSETTLED_SEARCH &&
        o->unplanned_relearns < PROPHET_UNSETTLED_RELEARNS)
        return;
    o->unsettled = 1;
    o->unsettled_calls = 0;
    prophet_msg(PROPHET_LOG_WARN,
                "comm %lu: its calls do not settle into a repeating iteration (no plan after %u "
                "calls searched for the iteration and %u lock breaks): the comm passes through, "
                "nothing is regrouped; observing %d calls in %d",
                (unsigned long)c->id, o->unplanned_search, o->unplanned_relearns, PROPHET_BLOCK_MAX,
                PROPHET_BLOCK_MAX * PROPHET_SAMPLE_EVERY);
}

/* An unsettled comm, outside its sampled runs: a call that is not held goes straight to NCCL. Read
 * before the verdict; prophet_unsettled_count moves on once a call took the not-held branch. */
static int prophet_unsettled_skip(const prophet_comm_t *c)
{
    const prophet_comm_order_t *o = &c->order;

    if (!o->unsettled || prophet_cfg.gate != PROPHET_GATE_HOLD)
        return 0;
    return (o->unsettled_calls / PROPHET_BLOCK_MAX) % PROPHET_SAMPLE_EVERY != 0;
}

static void prophet_unsettled_count(prophet_comm_t *c)
{
    if (c->order.unsettled && prophet_cfg.gate == PROPHET_GATE_HOLD)
        c->order.unsettled_calls++;
}

/* Observed passthrough (observe mode, or hold mode while the iteration is unknown): the call runs
 * on the caller's stream between a ready event and an end event that the poller turns into
 * readiness and duration. */
static ncclResult_t prophet_observed_call(prophet_comm_t *c, const prophet_call_t *k)
{
    prophet_inflight_t *f = prophet_comm_record_get(c, 1);
    CUevent ready = prophet_comm_event_get(c), end = prophet_comm_event_get(c);
    ncclResult_t nrc;
    CUresult rc = CUDA_SUCCESS;

    c->stats.passthrough++;
    c->stats.observed++;
    prophet_hold_work_own(k->stream, 0); /* real work of the job on the stream */
    if (!f || !ready || !end || (rc = prophet_cu.EventRecord(ready, k->stream)) != CUDA_SUCCESS) {
        if (rc != CUDA_SUCCESS)
            prophet_comm_fail(c, "cuEventRecord", rc);
        if (f)
            f->n = 0; /* not the record of a call: freed */
        prophet_comm_record_put(c, f);
        prophet_comm_event_put(c, ready);
        prophet_comm_event_put(c, end);
        return prophet_real_allreduce(c, k);
    }
    f->release_us = prophet_now_us();
    nrc = prophet_real_allreduce(c, k);
    if ((rc = prophet_cu.EventRecord(end, k->stream)) != CUDA_SUCCESS) {
        prophet_comm_fail(c, "cuEventRecord", rc);
        /* the ready event was recorded: keep it out of the pool until it fires (leak is tiny) */
        f->n = 0;
        prophet_comm_record_put(c, f);
        prophet_comm_event_put(c, end);
        return nrc;
    }
    f->n = 1;
    f->deferred = 0;
    f->start = ready;
    f->end = end;
    f->bytes = prophet_call_bytes(k);
    f->block = c->order.block_number++;
    f->m[0] = prophet_call_member(k, ready);
    prophet_inflight_push(c, f);
    return nrc;
}

/* Whether calls may be held: the learner's iteration is known, anchored by bytes and stable
 * (program-order facts, equal on every rank; they change only at iteration starts). */
static int prophet_holding(const prophet_comm_t *c)
{
    return c->order.iter_len >= 2 && c->order.phase_ok &&
           c->order.stable_iters >= prophet_stable_iters_needed();
}

/* Hold mode, at each iteration start (program order, alike on every rank): is this a
 * measurement iteration, and is it time for the first agreement? Only iterations whose calls are
 * held count (before that, calls pass through and their readiness is our own schedule's). */
static void prophet_measure_step(prophet_comm_t *c, uint64_t iteration)
{
    /* under a passthrough plan (calls go straight to NCCL), and under the plan the loop's trials
     * kept, only one in PROPHET_SAMPLE_EVERY: a measurement iteration runs its calls in 64-call
     * blocks, not the plan's (about +30% for that iteration on DDP ResNet-50 at 4 ranks); one in 8
     * while no plan is kept, where the fitted model needs them */
    uint32_t every =
        c->loop.direct || c->loop.chosen ? PROPHET_SAMPLE_EVERY : PROPHET_MEASURE_EVERY;

    c->order.measuring = prophet_cfg.gate == PROPHET_GATE_HOLD && prophet_holding(c) &&
                         (!c->agree.have_plan || iteration % every == 0);
    c->order.measure_phase = (iteration / every) % 2 ? PROPHET_BLOCK_MAX / 2 : 0;
    if (!c->order.measuring)
        return;
    if (++c->order.measured_iters == PROPHET_MEASURE_WARMUP + 1 && !c->agree.have_plan &&
        !c->agree.plan_pending)
        c->agree.next_agree_iter = iteration + 1; /* agree at the next iteration start */
}

/* Hold mode: does the call just added close its block? Program-order data only. */
static int prophet_closes_block(const prophet_comm_t *c, uint32_t index)
{
    const prophet_block_t *b = &c->blocks.pending;

    if (b->n >= PROPHET_BLOCK_MAX)
        return 1;
    if (c->order.iter_len && index + 1 >= c->order.iter_len)
        return 1; /* blocks never span iterations */
    if (c->agree.have_plan && !c->order.measuring)
        return prophet_engine_closes_block(c->models.engine, index);
    /* Measurement iterations, which are also the built-in policy until a plan is agreed (every
     * held iteration measures then): runs of PROPHET_BLOCK_MAX consecutive calls. */
    return (index + 1 + c->order.measure_phase) % PROPHET_BLOCK_MAX == 0;
}

static ncclResult_t prophet_hold(prophet_comm_t *c, const prophet_call_t *k)
{
    prophet_block_t *b = &c->blocks.pending;
    CUevent ready = prophet_comm_event_get(c);
    CUresult rc = CUDA_ERROR_OUT_OF_MEMORY;

    if (!ready || (rc = prophet_cu.EventRecord(ready, k->stream)) != CUDA_SUCCESS) {
        /* No ready event for X to wait on: the call is held all the same (its peers hold it) and
         * its block is launched on the members' stream, as the same group (release.c). */
        prophet_comm_event_put(c, ready);
        ready = NULL;
        prophet_comm_fail(c, "recording a held call's ready event", rc);
    }
    if (b->n == 0) {
        b->stream = k->stream;
        b->owner = pthread_self();
        b->number = c->order.block_number;
    }
    if (!ready)
        b->on_stream = 1;
    b->m[b->n++] = prophet_call_member(k, ready);
    /* A block's first member may wait behind the previous block's gate: its ready event then
     * measures our own schedule, not the job. The others are true readiness (the first call of
     * the iteration too: the job's own end-of-iteration wait precedes it). */
    b->m[b->n - 1].measure = c->order.measuring && (b->n > 1 || k->index == 0);
    b->bytes += prophet_call_bytes(k);
    b->last_arrival_us = k->arrival_us;
    b->stall_warned = 0;
    prophet_hold_call_held(c, k->stream, c->gpu.gate_gen + 1, k->sendbuff, k->recvbuff,
                           prophet_call_bytes(k));
    if (prophet_closes_block(c, k->index))
        return prophet_release_pending(c);
    prophet_msg(PROPHET_LOG_TRACE, "comm %lu iteration %lu: call #%u held in block %u (%u calls)",
                (unsigned long)c->id, (unsigned long)k->iteration, k->index, b->number, b->n);
    return ncclSuccess;
}

/* Rule 7 of docs/completion-holding.md: a call joins the open block only if its buffers overlap no
 * member's (all_reduce(t) twice in a row must see the first sum) and its stream is not materially
 * behind the block (real work that may have read a held result lies between them). */
static int prophet_ranges_overlap(uintptr_t a, size_t na, uintptr_t b, size_t nb)
{
    return a < b + nb && b < a + na;
}

static int prophet_may_join(prophet_comm_t *c, const prophet_call_t *k)
{
    const prophet_block_t *b = &c->blocks.pending;
    size_t bytes = prophet_call_bytes(k);
    uintptr_t s = (uintptr_t)k->sendbuff, r = (uintptr_t)k->recvbuff;

    for (uint32_t i = 0; i < b->n; i++) {
        const prophet_member_t *m = &b->m[i];
        size_t mb = m->count * prophet_dtype_size(m->dtype);
        uintptr_t ms = (uintptr_t)m->sendbuff, mr = (uintptr_t)m->recvbuff;
        if (prophet_ranges_overlap(r, bytes, ms, mb) || prophet_ranges_overlap(r, bytes, mr, mb) ||
            prophet_ranges_overlap(s, bytes, mr, mb))
            return 0;
    }
    return prophet_hold_may_join(c, k->stream, c->gpu.gate_gen + 1);
}

/* Arguments NCCL might reject, or custom reduction ops: never deferred, so that NCCL's own
 * error reaches the caller from the call that caused it. */
static int prophet_schedulable_args(const prophet_call_t *k)
{
    return k->count > 0 && (unsigned)k->dtype < ncclNumTypes && (unsigned)k->op < ncclNumOps;
}

static ncclResult_t prophet_allreduce_in(prophet_comm_t *c, const void *sendbuff, void *recvbuff,
                                         size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                                         CUstream stream);

/* The whole interception runs inside the preload (its own CUDA and NCCL calls pass the wrappers).
 */
ncclResult_t prophet_allreduce(prophet_comm_t *c, const void *sendbuff, void *recvbuff,
                               size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                               CUstream stream)
{
    ncclResult_t nrc;

    if (prophet_cfg.gate == PROPHET_GATE_HOLD && prophet_group_depth() == 0)
        prophet_hold_before_call(c, stream);
    prophet_hold_enter();
    nrc = prophet_allreduce_in(c, sendbuff, recvbuff, count, datatype, op, stream);
    prophet_hold_leave();
    return nrc;
}

/* A stage's verdict (route.c), once decided: counted per reason (the summary line's pass_*) and
 * one TRACE line. */
static int prophet_routed(prophet_comm_t *c, const prophet_call_t *k, prophet_route_t r)
{
    if (r.verdict == PROPHET_VERDICT_NEXT)
        return 0;
    c->stats.route[r.why]++;
    prophet_msg(PROPHET_LOG_TRACE, "comm %lu: allreduce count=%zu stream %p: %s (%s)",
                (unsigned long)c->id, k->count, (void *)k->stream, prophet_verdict_name(r.verdict),
                prophet_route_why_name(r.why));
    return 1;
}

/* The program-order release points before the call joins anything: the held block goes first
 * when the call is on another stream, outside the learned sequence, starts an iteration, breaks
 * or leaves the sequence, or may not join (H7). */
static void prophet_release_point(prophet_comm_t *c, const prophet_call_t *k, int flags)
{
    if (c->blocks.pending.n &&
        (c->blocks.pending.stream != k->stream || flags < 0 ||
         (flags & (PROPHET_LEARN_ITER_START | PROPHET_LEARN_RELEARN | PROPHET_LEARN_EXTRA)) ||
         !prophet_may_join(c, k)))
        prophet_release_pending(c);
}

/* Straight to NCCL: whatever this comm holds goes first, in order (no-op inside a user group:
 * released at its outermost ncclGroupStart). Unlocks. */
static ncclResult_t prophet_pass(prophet_comm_t *c, const prophet_call_t *k, int in_group)
{
    if (!in_group)
        prophet_release_pending(c);
    c->stats.passthrough++;
    prophet_hold_work_own(k->stream, 0); /* real work of the job on the stream */
    pthread_mutex_unlock(&c->lock);
    return prophet_real_allreduce(c, k);
}

/* A failure no rank can handle alone (prophet_comm_error): what it held goes first (the same
 * group its peers launch), then this call and every later one return the error, unissued.
 * Unlocks. */
static ncclResult_t prophet_fail(prophet_comm_t *c, int in_group)
{
    ncclResult_t nrc;

    if (!in_group)
        prophet_release_pending(c);
    nrc = c->error;
    pthread_mutex_unlock(&c->lock);
    return nrc;
}

/* Carries out a verdict. Unlocks. */
static ncclResult_t prophet_route_act(prophet_comm_t *c, const prophet_call_t *k, prophet_route_t r,
                                      int in_group)
{
    ncclResult_t nrc;

    switch (r.verdict) {
    case PROPHET_VERDICT_HOLD:
        nrc = prophet_hold(c, k);
        break;
    case PROPHET_VERDICT_OBSERVE:
        nrc = prophet_observed_call(c, k);
        break;
    case PROPHET_VERDICT_PASS:
        return prophet_pass(c, k, in_group);
    default:
        return prophet_fail(c, in_group);
    }
    pthread_mutex_unlock(&c->lock);
    return nrc;
}

/* Gathers the facts stage by stage (route.h), acting between the stages in program order: the
 * setup, the capture query, the learner, the release points, the iteration start's steps. Every
 * fact is program-order data, the same on every rank (I1). */
static ncclResult_t prophet_allreduce_in(prophet_comm_t *c, const void *sendbuff, void *recvbuff,
                                         size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                                         CUstream stream)
{
    prophet_call_t k = {.sendbuff = sendbuff,
                        .recvbuff = recvbuff,
                        .count = count,
                        .dtype = datatype,
                        .op = op,
                        .stream = stream,
                        .arrival_us = prophet_now_us(),
                        .index = UINT32_MAX,
                        .iteration = 0};
    prophet_route_facts_t f = {.in_group = prophet_group_depth() > 0};
    CUstreamCaptureStatus cap = CU_STREAM_CAPTURE_STATUS_NONE;
    prophet_route_t r;
    int flags;

    pthread_mutex_lock(&c->lock);
    c->stats.calls++;
    f.comm_error = c->error != ncclSuccess;
    f.blocking = c->blocking;
    f.args_ok = prophet_schedulable_args(&k);
    f.setup_tried = c->setup != 0;
    if (prophet_routed(c, &k, r = prophet_route(PROPHET_ROUTE_ENTRY, &f)))
        goto act;
    /* the setup (and its vote, a host wait) at the first call outside a user group: the same on
     * every rank */
    f.setup_failed = prophet_comm_setup(c, k.stream) != 0;
    f.comm_error = c->error != ncclSuccess;
    if (prophet_routed(c, &k, r = prophet_route(PROPHET_ROUTE_SETUP, &f)))
        goto act;
    f.comm_passthrough = c->passthrough;
    f.capture_possible = prophet_capture_possible();
    if (prophet_route_asks_capture(&f)) {
        f.capture_failed = prophet_cu.StreamIsCapturing(k.stream, &cap) != CUDA_SUCCESS;
        f.capturing = !f.capture_failed && cap != CU_STREAM_CAPTURE_STATUS_NONE;
        if (f.capture_failed) /* NCCL's own enqueue fails the call with this error then */
            prophet_comm_error(c, "cuStreamIsCapturing", ncclUnhandledCudaError);
    }
    if (prophet_routed(c, &k, r = prophet_route(PROPHET_ROUTE_CAPTURE, &f)))
        goto act;
    flags = prophet_observe(c, &k, f.in_group ? k.arrival_us : -1);
    prophet_unsettled_step(c, &k, flags);
    if (prophet_routed(c, &k, r = prophet_route(PROPHET_ROUTE_OBSERVED, &f)))
        goto act;
    prophet_release_point(c, &k, flags);
    f.learner_ok = flags >= 0;
    f.extra = flags >= 0 && (flags & PROPHET_LEARN_EXTRA);
    if (prophet_routed(c, &k, r = prophet_route(PROPHET_ROUTE_JOINED, &f)))
        goto act;
    f.iter_start = flags >= 0 && (flags & PROPHET_LEARN_ITER_START);
    if (f.iter_start) {
        prophet_loop_iter_start(c, k.iteration, k.arrival_us);
        prophet_agreement_step(c, k.iteration);
        f.comm_error = c->error != ncclSuccess;
        if (prophet_routed(c, &k, r = prophet_route(PROPHET_ROUTE_AGREED, &f)))
            goto act;
        prophet_measure_step(c, k.iteration);
        prophet_loop_iter_mark(c, k.iteration, k.stream);
    }
    f.comm_passthrough = c->passthrough;
    f.index_known = k.index != UINT32_MAX;
    f.iter_len_one = c->order.iter_len == 1;
    f.plan_direct = c->loop.direct;
    f.have_plan = c->agree.have_plan;
    f.measuring = c->order.measuring;
    f.gate_hold = prophet_cfg.gate == PROPHET_GATE_HOLD;
    f.holding = prophet_holding(c);
    f.unsettled_skip = prophet_unsettled_skip(c);
    prophet_routed(c, &k, r = prophet_route(PROPHET_ROUTE_ITERATION, &f));
    if (r.verdict == PROPHET_VERDICT_OBSERVE || r.why == PROPHET_WHY_UNSETTLED)
        prophet_unsettled_count(c);
act:
    return prophet_route_act(c, &k, r, f.in_group);
}

void prophet_comm_barrier(ncclComm_t comm)
{
    prophet_comm_t *c = prophet_comm_find(comm);

    if (!c)
        return;
    prophet_hold_enter();
    pthread_mutex_lock(&c->lock);
    c->stats.calls++;
    if (prophet_group_depth() == 0)
        prophet_release_pending(c);
    pthread_mutex_unlock(&c->lock);
    prophet_hold_leave();
}
