/* Agreement of plans (I1). Plans come from timing data that differ per rank, so only
 * rank 0 makes one; at the first call of iteration K (program order: K = learn_iters, then every
 * replan_iters) every rank broadcasts PROPHET_PLAN_WIRE_BYTES from rank 0 on its internal stream,
 * and at the first call of iteration K + 2 or later installs what arrived. Whether a plan is used
 * depends only on the agreed bytes and on program-order data (the call count and the signature
 * hash of the last complete iteration, equal on every rank because NCCL requires every rank to
 * make the same calls), so every rank decides alike. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/agreement.h"
#include "engine/iteration_samples.h"
#include "engine/comm_state.h"
#include "real_libs/cuda_driver.h"
#include "schedule_log/log_bridge.h"
#include "debug_lines/log_line.h"
#include "real_libs/nccl_symbols.h"
#include "engine/readiness_poller.h"
#include "config/process_config.h"

/* Polls ev until it fired: the same wait as cuEventSynchronize through another entry point. */
static CUresult prophet_agreement_poll(CUevent ev)
{
    const struct timespec pause = {.tv_sec = 0, .tv_nsec = 20000};
    CUresult rc;

    while ((rc = prophet_cu.EventQuery(ev)) == CUDA_ERROR_NOT_READY)
        nanosleep(&pause, NULL);
    return rc;
}

/* Waits until the broadcast's bytes are in plan_host. Every rank installs the agreed plan at the
 * same iteration, so a rank whose wait fails must still get the bytes (another way to wait) or
 * stop the comm with an error: installing nothing while its peers install the plan would change
 * its blocks (docs/reliability.md, "Local failures"). 0 when the bytes are there. */
static int prophet_agreement_wait(prophet_comm_t *c)
{
    CUresult rc = CUDA_ERROR_INVALID_HANDLE;
    /* the caller may be capturing, or another thread (cuda_driver.h): our waits are relaxed */
    CUstreamCaptureMode mode = prophet_capture_relax();

    /* a bounded wait at a program-order point: the broadcast was issued two iterations ago */
    if (c->agree.plan_event_ok &&
        (rc = prophet_cu.EventSynchronize(c->agree.plan_event)) == CUDA_SUCCESS)
        goto out;
    prophet_comm_fail(c, "waiting for the plan broadcast", rc);
    if (c->agree.plan_event_ok)
        rc = prophet_agreement_poll(c->agree.plan_event);
    else
        rc = prophet_cu.StreamSynchronize(
            c->gpu.internal_stream); /* X is FIFO: the broadcast is on it */
    if (rc != CUDA_SUCCESS)
        prophet_comm_error(c, "waiting for the plan broadcast", ncclUnhandledCudaError);
out:
    prophet_capture_restore(mode);
    return rc == CUDA_SUCCESS ? 0 : -1;
}

static void prophet_agreement_install(prophet_comm_t *c, uint64_t iteration)
{
    prophet_plan_t *plan;

    c->agree.plan_pending = 0;
    if (c->passthrough || prophet_agreement_wait(c) != 0)
        return;
    plan = calloc(1, sizeof(*plan));
    if (!plan)
        return; /* cannot happen in practice; treated like a rejected plan on this rank only */
    if (prophet_plan_unpack(plan, c->agree.plan_host, PROPHET_PLAN_WIRE_BYTES) < 0 ||
        plan->n_calls == 0) {
        prophet_msg(PROPHET_LOG_INFO, "comm %lu iteration %lu: no plan from rank 0 yet",
                    (unsigned long)c->id, (unsigned long)iteration);
        goto out;
    }
    /* the closed loop's cadence: agreed bytes, so every rank schedules the next broadcast alike */
    if (plan->trial.next_in)
        c->agree.next_agree_iter = c->loop.agree_iter + plan->trial.next_in;
    if (plan->n_calls != c->agree.agree_n || plan->sig_hash != c->agree.agree_hash ||
        prophet_engine_set_plan(c->models.engine, plan) != 0) {
        c->stats.plan_rejects++;
        prophet_msg(PROPHET_LOG_INFO,
                    "comm %lu iteration %lu: plan v%u does not match the calls here; built-in "
                    "policy kept",
                    (unsigned long)c->id, (unsigned long)iteration, plan->version);
        goto out;
    }
    c->agree.have_plan = 1;
    c->stats.plans++;
    prophet_msg(PROPHET_LOG_INFO,
                "comm %lu iteration %lu: plan v%u agreed (%s, %u calls in %u blocks, predicted "
                "%.0f us)",
                (unsigned long)c->id, (unsigned long)iteration, plan->version,
                prophet_policy_name(plan->policy), plan->n_calls, plan->n_blocks,
                plan->predicted_iteration_us);
    prophet_loop_installed(c, plan, iteration);
    prophet_logb_plan(c, iteration, plan);
out:
    free(plan);
}

/* Rank 0: packs its plan (or an empty one) into the broadcast buffer. */
static void prophet_agreement_pack(prophet_comm_t *c)
{
    const prophet_profile_t *prof = prophet_learner_profile(c->models.learner);
    prophet_planner_opts_t po = {
        .policy = prophet_cfg_policy(),
        .fusion_bytes = prophet_cfg.fusion_bytes,
        .cycle_us = prophet_cfg.cycle_us,
        .bucket_bytes = prophet_cfg.bucket_bytes,
        .credit_bytes = prophet_cfg.credit_bytes,
        .ranks = c->nranks > 0 ? (uint32_t)c->nranks : 1,
    };
    prophet_plan_t *plan = calloc(1, sizeof(*plan));
    prophet_net_t net;

    memset(c->agree.plan_host, 0, PROPHET_PLAN_WIRE_BYTES);
    if (!plan)
        return;
    prophet_netmodel_get(c->models.net, &net);
    if (prof && prof->n_calls == c->agree.agree_n &&
        (prophet_loop_on() ? prophet_loop_plan(c, &po, prof, &net, plan)
                           : prophet_plan_make(&po, prof, &net, plan)) == 0) {
        plan->version = ++c->agree.plan_version;
        plan->n_calls = c->agree.agree_n;
        plan->sig_hash = c->agree.agree_hash; /* the hash every rank computes the same way */
        if (prophet_plan_pack(plan, c->agree.plan_host, PROPHET_PLAN_WIRE_BYTES) < 0)
            memset(c->agree.plan_host, 0, PROPHET_PLAN_WIRE_BYTES);
    }
    free(plan);
}

static ncclResult_t prophet_agreement_bcast(prophet_comm_t *c)
{
    return prophet_nccl.Broadcast((void *)(uintptr_t)c->agree.plan_dev,
                                  (void *)(uintptr_t)c->agree.plan_dev, PROPHET_PLAN_WIRE_BYTES,
                                  ncclUint8, 0, c->handle, c->gpu.internal_stream);
}

static void prophet_agreement_broadcast(prophet_comm_t *c, uint64_t iteration)
{
    prophet_log_level_t lvl;
    prophet_net_t net;
    double probe;
    ncclResult_t nrc;
    CUresult rc;

    c->loop.agree_iter = iteration;
    c->agree.agree_n = c->order.seq_n_last;
    c->agree.agree_hash = c->order.seq_hash_last;
    if (c->rank == 0 && !c->passthrough)
        prophet_agreement_pack(c);
    else if (c->rank == 0)
        memset(c->agree.plan_host, 0, PROPHET_PLAN_WIRE_BYTES);
    nrc = prophet_agreement_bcast(c);
    if (nrc != ncclSuccess) {
        /* Its peers issued this broadcast: skipping it would shift every later NCCL call of this
         * rank against theirs. Issued once more: in step if the failed call enqueued nothing
         * (argument checks, an allocation); failing again if the comm is broken (NCCL returns a
         * comm's async error from every later call). A second failure stops the comm with the
         * error (docs/reliability.md, "Local failures"). */
        prophet_msg(PROPHET_LOG_WARN, "comm %lu: plan broadcast failed (%s); issuing it again",
                    (unsigned long)c->id, prophet_nccl_errstr(nrc));
        if ((nrc = prophet_agreement_bcast(c)) != ncclSuccess) {
            prophet_comm_error(c, "the plan broadcast", nrc);
            return;
        }
    }
    /* every rank that broadcast has a plan pending (a passthrough comm too: it installs nothing
     * but skips the next agreement point as its peers do) */
    c->agree.plan_pending = 1;
    c->agree.plan_apply_iter = iteration + 2;
    c->agree.plan_event_ok = 0;
    if (c->passthrough)
        return;
    if ((rc = prophet_cu.EventRecord(c->agree.plan_event, c->gpu.internal_stream)) != CUDA_SUCCESS)
        prophet_comm_fail(c, "recording the plan broadcast's event", rc); /* X is waited for */
    else
        c->agree.plan_event_ok = 1;
    prophet_netmodel_get(c->models.net, &net);
    probe = prophet_poller_probe_Bps();
    /* while a kept plan is agreed again every PROPHET_TRIAL_CHECK_EVERY iterations: TRACE */
    lvl = c->loop.chosen ? PROPHET_LOG_TRACE : PROPHET_LOG_INFO;
    if (probe >= 0)
        prophet_msg(lvl,
                    "comm %lu iteration %lu: network alpha=%.1f us bandwidth=%.1f MB/s; live "
                    "throughput %.2f MB/s (eBPF)",
                    (unsigned long)c->id, (unsigned long)iteration, net.alpha_us,
                    net.bandwidth_Bps / 1e6, probe / 1e6);
    else
        prophet_msg(lvl, "comm %lu iteration %lu: network alpha=%.1f us bandwidth=%.1f MB/s (%s)",
                    (unsigned long)c->id, (unsigned long)iteration, net.alpha_us,
                    net.bandwidth_Bps / 1e6,
                    net.source == PROPHET_NET_FIXED    ? "fixed"
                    : net.source == PROPHET_NET_FITTED ? "fitted from NCCL operations"
                                                       : "default guess");
    prophet_logb_net(c, probe);
}

void prophet_agreement_step(prophet_comm_t *c, uint64_t iteration)
{
    if (c->setup <= 0)
        return;
    if (c->agree.plan_pending && iteration >= c->agree.plan_apply_iter)
        prophet_agreement_install(c, iteration);
    if (iteration < c->agree.next_agree_iter)
        return;
    c->agree.next_agree_iter =
        iteration + (prophet_cfg.replan_iters ? prophet_cfg.replan_iters : 1);
    if (c->agree.plan_pending)
        return; /* the previous broadcast is not installed yet: skipped alike on every rank */
    prophet_agreement_broadcast(c, iteration);
}
