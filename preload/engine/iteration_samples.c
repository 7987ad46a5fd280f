/* The closed loop's instruments on rank 0 (the decisions are sched/closed_loop.c's: measurements
 * in, the plan to agree out). In the default mode with no PROPHET_POLICY, the plan in force is
 * judged by the iteration time it measures. Rank 0, which makes every plan, times each iteration
 * on the GPU: an event (a mark) recorded on the stream of the iteration's first call, before the
 * call is issued or held, and the time between two consecutive marks is the iteration's time as
 * the GPU ran it, under the plan that scheduled its calls, however far the host ran ahead of the
 * GPU (PyTorch's host runs up to the launch queue's depth ahead when nothing synchronises; the
 * host's own iteration times then belong to the plan of an earlier iteration). The marks are
 * queried, never waited for, at each iteration's first call: a sample arrives once the next mark
 * fired, and counts for the candidate whose plan ran that iteration (the equal of the job's own
 * period on every rank of a synchronous data-parallel job up to jitter, since every iteration
 * ends in all-reduces that all ranks wait for). Each candidate plan is broadcast in turn and is in
 * force for PROPHET_TRIAL_WINDOW iterations on every rank (the plan broadcast makes the
 * iterations the same everywhere); its figure travels in the next plan so that every rank logs the
 * same figures and the same choice. Iterations that carry a broadcast, a measurement (held in runs
 * of PROPHET_BLOCK_MAX) or an extra call of the job are not samples. When the plan in force is
 * passthrough, calls go straight to NCCL: only one iteration in PROPHET_SAMPLE_EVERY is observed
 * (measured), so that a job the preload cannot help pays for little more than the learner's
 * bookkeeping and the eBPF probe (a probe per rank measured 1-6% of an emulated job's iteration
 * time: docs/benchmarks.md). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/iteration_samples.h"
#include "engine/comm_state.h"
#include "real_libs/cuda_driver.h"
#include "schedule_log/log_bridge.h"
#include "debug_lines/log_line.h"
#include "engine/readiness_poller.h"
#include "config/process_config.h"

int prophet_loop_on(void)
{
    return prophet_cfg.gate == PROPHET_GATE_HOLD && !prophet_cfg.policy_set;
}

void prophet_loop_reset(prophet_comm_t *c)
{
    c->loop.in_force = PROPHET_CAND_NONE;
    /* before any choice the job runs what it ran while the preload learned, passthrough: the
     * incumbent that trial_iters counts against (and the first round's duels defend) */
    c->loop.kept_cand = PROPHET_CAND_PASSTHROUGH;
    c->loop.direct = 0;
    c->loop.chosen = 0;
    c->loop.iter_start_us = 0;
    c->loop.iter_clean = 0;
    c->loop.iter_cand = PROPHET_CAND_NONE;
    if (c->loop.cl)
        prophet_closed_loop_reset(c->loop.cl);
}

/* The oldest mark's iteration is over when the next mark exists; its time is the GPU time
 * between the two marks when both events fired (the host's instants when either has no event).
 * Returns 1 when a sample was taken or the mark was dropped, 0 when the GPU is not there yet. */
static int prophet_loop_time_oldest(prophet_comm_t *c, double *us)
{
    prophet_comm_loop_t *L = &c->loop;
    const prophet_loop_mark_t *a = &L->marks[L->mark_head],
                              *b = &L->marks[(L->mark_head + 1) % PROPHET_LOOP_MARKS];
    float ms = 0;
    CUresult rc;

    *us = -1;
    if (!a->ev || !b->ev) {
        *us = (double)(b->host_us - a->host_us);
        return 1;
    }
    if ((rc = prophet_cu.EventQuery(b->ev)) == CUDA_ERROR_NOT_READY)
        return 0;
    if (rc == CUDA_SUCCESS && prophet_cu.EventElapsedTime(&ms, a->ev, b->ev) == CUDA_SUCCESS &&
        ms > 0) {
        *us = (double)ms * 1000.0;
    }
    return 1;
}

/* Rank 0: the iterations whose GPU time is known become samples of the candidate that ran them,
 * oldest first. A query never waits: a host far ahead of the GPU gets its samples late, and
 * the trials' windows wait for them (prophet_trials_sample counts a sample only for the
 * candidate being timed). */
/* One INFO line when the kept plan's figures drifted. */
static void prophet_loop_log_drift(prophet_comm_t *c)
{
    int restart;
    const char *what = prophet_closed_loop_drift(c->loop.cl, &restart);

    if (!what)
        return;
    if (restart)
        prophet_msg(PROPHET_LOG_INFO, "comm %lu: %s drifted since the choice; trials again",
                    (unsigned long)c->id, what);
    else
        prophet_msg(PROPHET_LOG_INFO,
                    "comm %lu: %s drifted since the choice; passthrough kept (nothing to re-time "
                    "while the network and the profile hold), the next drift must last %u samples",
                    (unsigned long)c->id, what,
                    prophet_trials_drift_lasts(prophet_closed_loop_trials(c->loop.cl)));
}

/* The network's bandwidth as the plans would see it now: the fit from NCCL operations' times (the
 * rate while sending), raised to the eBPF throughput's recent peak. Not the eBPF throughput itself
 * while a plan holds calls: the bytes of an iteration are the same whatever slows it, so the rate
 * over wall time falls with the iteration time as much on a busy host as under a slower link
 * (the soak of test/e2e/soak_trials.py, ResNet-50 per-tensor, 4 ranks, two busy loops on and off:
 * the eBPF rate swung 50-76 MB/s with the bursts and started full rounds; the fit stayed within
 * 65-115 MB/s). Under a passthrough plan no operation is timed and the fit stands still (125 MB/s
 * before and after a link slowed to 250 Mbit/s): the eBPF throughput is then the only live figure.
 * < 0: none. */
static double prophet_loop_net_Bps(prophet_comm_t *c)
{
    prophet_net_t net;

    if (c->loop.direct || !c->models.net)
        return prophet_poller_probe_Bps();
    prophet_netmodel_get(c->models.net, &net);
    return net.bandwidth_Bps;
}

static void prophet_loop_drain(prophet_comm_t *c, uint64_t iteration)
{
    prophet_comm_loop_t *L = &c->loop;
    const prophet_profile_t *p = prophet_learner_profile(c->models.learner);
    double backward = p && p->n_calls ? p->ready_us[p->n_calls - 1] : 0, us;
    /* read only when a sample may feed the kept plan's drift check (a trial window ignores it):
     * the model's read may refit it, on the caller's thread */
    double net_Bps = c->loop.chosen && L->mark_n >= 2 ? prophet_loop_net_Bps(c) : -1;
    CUstreamCaptureMode mode = prophet_capture_relax();

    while (L->mark_n >= 2 && prophet_loop_time_oldest(c, &us)) {
        prophet_loop_mark_t *a = &L->marks[L->mark_head];
        prophet_log_sample_t s = {.iteration = a->iteration,
                                  .taken_at = iteration,
                                  .candidate = a->cand,
                                  .us = us,
                                  .gpu = a->ev != NULL,
                                  .use = PROPHET_TRIAL_SAMPLE_IGNORED};

        if (a->clean && us > 0) {
            s.use = prophet_closed_loop_sample(L->cl, a->cand, us, net_Bps, backward);
            prophet_logb_sample(c, &s);
        }
        prophet_comm_event_put(c, a->ev);
        a->ev = NULL;
        L->mark_head = (L->mark_head + 1) % PROPHET_LOOP_MARKS;
        L->mark_n--;
    }
    prophet_capture_restore(mode);
    prophet_loop_log_drift(c);
}

void prophet_loop_iter_start(prophet_comm_t *c, uint64_t iteration, int64_t now_us)
{
    prophet_comm_loop_t *L = &c->loop;

    if (!L->cl)
        return;
    if (L->mark_n) /* the iteration that just ended: a sample unless an extra call came */
        L->marks[(L->mark_head + L->mark_n - 1) % PROPHET_LOOP_MARKS].clean = L->iter_clean;
    L->iter_start_us = now_us;
    prophet_loop_drain(c, iteration);
}

/* Rank 0: the mark of the iteration that begins with this call, recorded on its stream before
 * the call is issued or held. A full ring (a GPU more than PROPHET_LOOP_MARKS iterations behind,
 * or marks whose events never fire) drops its oldest mark unsampled. */
static void prophet_loop_mark_push(prophet_comm_t *c, uint64_t iteration, CUstream stream)
{
    prophet_comm_loop_t *L = &c->loop;
    prophet_loop_mark_t *m;
    CUresult rc;

    if (L->mark_n == PROPHET_LOOP_MARKS) {
        prophet_comm_event_put(c, L->marks[L->mark_head].ev);
        L->marks[L->mark_head].ev = NULL;
        L->mark_head = (L->mark_head + 1) % PROPHET_LOOP_MARKS;
        L->mark_n--;
    }
    m = &L->marks[(L->mark_head + L->mark_n++) % PROPHET_LOOP_MARKS];
    m->iteration = iteration;
    m->host_us = L->iter_start_us;
    m->cand = L->iter_cand;
    m->clean = L->iter_clean;
    m->ev = prophet_comm_event_get(c);
    if (m->ev && (rc = prophet_cu.EventRecord(m->ev, stream)) != CUDA_SUCCESS) {
        prophet_comm_event_put(c, m->ev); /* not recorded: the host instant stands in */
        m->ev = NULL;
    }
}

void prophet_loop_iter_mark(prophet_comm_t *c, uint64_t iteration, CUstream stream)
{
    int broadcast_here = c->agree.plan_pending && c->loop.agree_iter == iteration;

    /* every rank: the share of iterations run under a trial plan other than the kept one */
    if (c->agree.have_plan && c->loop.in_force != PROPHET_CAND_NONE) {
        c->stats.iters++;
        c->stats.trial_iters += !c->loop.chosen && c->loop.in_force != c->loop.kept_cand;
    }
    c->loop.iter_cand = c->loop.in_force;
    c->loop.iter_clean = c->agree.have_plan && !c->order.measuring && !broadcast_here &&
                         c->loop.in_force != PROPHET_CAND_NONE;
    if (c->loop.cl && c->loop.iter_start_us)
        prophet_loop_mark_push(c, iteration, stream);
}

/* Writes the names of cands[0..n) into buf from len on, comma-separated; the new length. */
static size_t prophet_loop_names(char *buf, size_t size, size_t len, const uint32_t *cands,
                                 uint32_t n)
{
    for (uint32_t i = 0; i < n && len < size; i++)
        len += (size_t)snprintf(buf + len, size - len, "%s%s", i ? ", " : "",
                                prophet_cand_name(cands[i]));
    return len < size ? len : size - 1;
}

/* One INFO line per round: its candidates, the names merged into them, the incumbent. */
static void prophet_loop_log_round(const prophet_comm_t *c, const prophet_loop_events_t *ev)
{
    char tried[160] = "", merged[160] = "";
    uint32_t same[PROPHET_CAND_COUNT], m = 0, inc = ev->incumbent;

    for (uint32_t k = 0; k < PROPHET_CAND_COUNT; k++)
        if (ev->alias & (1u << k))
            same[m++] = k;
    prophet_loop_names(tried, sizeof(tried), 0, ev->cands, ev->n_cands);
    prophet_loop_names(merged, sizeof(merged), 0, same, m);
    prophet_msg(PROPHET_LOG_INFO, "comm %lu: trial round %u: %scandidates %s%s%s%s%s",
                (unsigned long)c->id, ev->round,
                ev->retime ? "the time drifted alone: the incumbent re-timed first; then " : "",
                tried, inc < PROPHET_CAND_COUNT ? "; incumbent " : "",
                inc < PROPHET_CAND_COUNT ? prophet_cand_name(inc) : "",
                m ? "; same blocks as one of these: " : "", merged);
}

/* One INFO line per duel. */
static void prophet_loop_log_duel(const prophet_comm_t *c, const prophet_loop_events_t *ev)
{
    static const char *const why[] = {"", "the first pass's leader",
                                      "the runner-up near the leader", "re-timing the incumbent"};
    const prophet_trials_t *t = prophet_closed_loop_trials(c->loop.cl);

    prophet_msg(PROPHET_LOG_INFO,
                "comm %lu: trial round %u: %s: %s (%.0f us) against %s (%.0f us) in alternating "
                "windows, %u to %u pairs",
                (unsigned long)c->id, t->round, why[ev->duel_kind < 4 ? ev->duel_kind : 0],
                prophet_cand_name(ev->duel_c), ev->duel_c_us, prophet_cand_name(ev->duel_d),
                ev->duel_d_us, 1, PROPHET_TRIAL_PAIRS_MAX);
}

int prophet_loop_plan(prophet_comm_t *c, const prophet_planner_opts_t *po,
                      const prophet_profile_t *prof, const prophet_net_t *net, prophet_plan_t *out)
{
    prophet_loop_events_t ev;

    if (!c->loop.cl && !(c->loop.cl = prophet_closed_loop_new()))
        return prophet_plan_make(po, prof, net, out);
    if (prophet_closed_loop_plan(c->loop.cl, po, prof, net, out, &ev) != 0)
        return prophet_plan_make(po, prof, net, out);
    if (ev.round_begun)
        prophet_loop_log_round(c, &ev);
    if (ev.duel_begun)
        prophet_loop_log_duel(c, &ev);
    return 0;
}

void prophet_loop_installed(prophet_comm_t *c, const prophet_plan_t *plan, uint64_t iteration)
{
    const prophet_plan_trial_t *t = &plan->trial;
    int again = c->loop.chosen && t->phase == PROPHET_TRIAL_CHOSEN; /* a re-agreement */

    c->loop.in_force = t->phase != PROPHET_TRIAL_OFF ? t->candidate : PROPHET_CAND_NONE;
    c->loop.direct = plan->policy == PROPHET_POLICY_PASSTHROUGH;
    c->loop.chosen = t->phase == PROPHET_TRIAL_CHOSEN;
    if (c->loop.chosen)
        c->loop.kept_cand = t->candidate;
    if (t->phase == PROPHET_TRIAL_OFF)
        return;
    if (t->judged != PROPHET_CAND_NONE)
        prophet_msg(PROPHET_LOG_INFO,
                    "comm %lu iteration %lu: trial round %u: %s measured %u us (median of %u "
                    "iterations)",
                    (unsigned long)c->id, (unsigned long)iteration, t->round,
                    prophet_cand_name(t->judged), t->judged_us, t->judged_samples);
    /* The kept plan is agreed again every PROPHET_TRIAL_CHECK_EVERY iterations: one INFO line
     * when it is chosen, TRACE for each re-agreement (one line per event, not per check): a
     * round always tries a candidate before it keeps one, so a kept plan following a kept plan is
     * the same plan agreed again. */
    if (t->phase == PROPHET_TRIAL_CHOSEN) {
        prophet_msg(again ? PROPHET_LOG_TRACE : PROPHET_LOG_INFO,
                    "comm %lu iteration %lu: trial round %u: %s kept (%u us)", (unsigned long)c->id,
                    (unsigned long)iteration, t->round, prophet_cand_name(t->candidate),
                    t->chosen_us);
        return;
    }
    prophet_msg(PROPHET_LOG_INFO, "comm %lu iteration %lu: trial round %u: trying %s",
                (unsigned long)c->id, (unsigned long)iteration, t->round,
                prophet_cand_name(t->candidate));
}
