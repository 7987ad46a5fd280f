/* Record -> JSON object conversions for the schedule log. */
#include "log_json.h"

#include <math.h>
#include <stdio.h>
#include <time.h>

const char *prophet_log_policy_name(prophet_policy_t p)
{
    static const char *const names[PROPHET_POLICY_COUNT] = {
        PROPHET_VALUES_policy(PROPHET_ENUM_NAME)};
    return (unsigned)p < PROPHET_POLICY_COUNT ? names[p] : "unknown";
}

const char *prophet_log_net_source_name(prophet_net_source_t s)
{
    switch (s) {
    case PROPHET_NET_DEFAULT:
        return "default";
    case PROPHET_NET_FITTED:
        return "fitted";
    case PROPHET_NET_EBPF:
        return "ebpf";
    case PROPHET_NET_FIXED:
        return "fixed";
    }
    return "unknown";
}

/* A JSON number for a double; null for NaN/inf (JSON has no such values). */
static json_t *num(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

json_t *prophet_log_json_meta(const prophet_log_meta_t *m, uint64_t iter_begin, uint64_t iter_end,
                              int trace, int64_t t0_us)
{
    char wall[40] = "";
    time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm))
        strftime(wall, sizeof(wall), "%Y-%m-%dT%H:%M:%SZ", &tm);
    return json_pack("{s:i, s:i, s:i, s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:s, s:{s:I, s:I}, s:b}",
                     "rank", m->rank, "nranks", m->nranks, "pid", m->pid, "host",
                     m->hostname ? m->hostname : "", "nccl_version",
                     m->nccl_version ? m->nccl_version : "", "policy", m->policy ? m->policy : "",
                     "gate", m->gate ? m->gate : "", "clock", "CLOCK_MONOTONIC", "time_unit", "us",
                     "t0_us", (json_int_t)t0_us, "wall_time", wall, "iterations", "begin",
                     (json_int_t)iter_begin, "end", (json_int_t)iter_end, "trace", trace != 0);
}

json_t *prophet_log_json_profile(uint64_t iteration, const prophet_profile_t *p)
{
    json_t *calls = json_array(), *steps = json_array();
    uint32_t n = p->n_calls <= PROPHET_MAX_CALLS ? p->n_calls : PROPHET_MAX_CALLS;
    uint32_t ns = p->n_steps <= PROPHET_MAX_CALLS ? p->n_steps : PROPHET_MAX_CALLS;
    for (uint32_t i = 0; calls && i < n; i++) {
        const prophet_call_sig_t *s = &p->sig[i];
        json_t *c = json_pack("{s:i, s:I, s:I, s:I, s:i, s:i, s:o, s:o, s:i}", "index", (int)i,
                              "comm_id", (json_int_t)s->comm_id, "count", (json_int_t)s->count,
                              "bytes", (json_int_t)s->bytes, "dtype", s->dtype, "op", s->op,
                              "ready_us", num(p->ready_us[i]), "spread_us", num(p->spread_us[i]),
                              "priority", (int)p->priority[i]);
        if (!c || json_array_append_new(calls, c))
            goto fail;
    }
    for (uint32_t i = 0; steps && i < ns; i++) {
        const prophet_step_t *s = &p->steps[i];
        json_t *o = json_pack("{s:i, s:i, s:o, s:o}", "first", (int)s->first, "last", (int)s->last,
                              "ready_us", num(s->ready_us), "gap_after_us", num(s->gap_after_us));
        if (!o || json_array_append_new(steps, o))
            goto fail;
    }
    if (!calls || !steps)
        goto fail;
    return json_pack("{s:s, s:I, s:i, s:i, s:o, s:o, s:i, s:o, s:o}", "kind", "profile",
                     "iteration", (json_int_t)iteration, "n_calls", (int)n, "n_steps", (int)ns,
                     "iteration_us", num(p->iteration_us), "forward_us", num(p->forward_us),
                     "iterations_seen", (int)p->iterations_seen, "calls", calls, "steps", steps);
fail:
    json_decref(calls);
    json_decref(steps);
    return NULL;
}

json_t *prophet_log_json_net(int64_t t_us, const prophet_net_t *net, double probe_Bps)
{
    return json_pack("{s:s, s:I, s:o, s:o, s:s, s:o}", "kind", "net", "t_us", (json_int_t)t_us,
                     "alpha_us", num(net->alpha_us), "bandwidth_Bps", num(net->bandwidth_Bps),
                     "source", prophet_log_net_source_name(net->source), "probe_Bps",
                     num(probe_Bps));
}

json_t *prophet_log_json_sample(const prophet_log_sample_t *s)
{
    static const char *const use[] = {"ignored", "window", "drift"};

    return json_pack("{s:s, s:I, s:I, s:s, s:o, s:s, s:s}", "kind", "sample", "iteration",
                     (json_int_t)s->iteration, "taken_at", (json_int_t)s->taken_at, "candidate",
                     prophet_cand_name(s->candidate), "us", num(s->us), "clock",
                     s->gpu ? "gpu" : "host", "use",
                     (unsigned)s->use < sizeof(use) / sizeof(use[0]) ? use[s->use] : "ignored");
}

/* The closed loop's part of a plan record (docs/log-schema.md), NULL for a fixed policy. */
static json_t *prophet_log_json_trial(const prophet_plan_trial_t *t)
{
    json_t *judged;

    if (t->phase == PROPHET_TRIAL_OFF)
        return NULL;
    judged = t->judged == PROPHET_CAND_NONE
                 ? json_null()
                 : json_pack("{s:s, s:i, s:i}", "candidate", prophet_cand_name(t->judged),
                             "samples", (int)t->judged_samples, "median_us", (int)t->judged_us);
    return json_pack("{s:s, s:s, s:i, s:i, s:o, s:o}", "phase",
                     t->phase == PROPHET_TRIAL_RUNNING ? "trial" : "chosen", "candidate",
                     prophet_cand_name(t->candidate), "round", (int)t->round, "next_in",
                     (int)t->next_in, "judged", judged ? judged : json_null(), "chosen_us",
                     t->phase == PROPHET_TRIAL_CHOSEN && t->chosen_us
                         ? json_integer((json_int_t)t->chosen_us)
                         : json_null());
}

json_t *prophet_log_json_plan(uint64_t from_iteration, const prophet_plan_t *plan)
{
    json_t *blocks = json_array();
    uint32_t nb = plan->n_blocks <= PROPHET_MAX_CALLS ? plan->n_blocks : PROPHET_MAX_CALLS;
    for (uint32_t b = 0; blocks && b < nb; b++) {
        uint32_t first = plan->block_first[b];
        uint32_t last =
            b + 1 < nb ? plan->block_first[b + 1] - 1 : (plan->n_calls ? plan->n_calls - 1 : 0);
        json_t *o = json_pack("{s:i, s:i}", "first", (int)first, "last", (int)last);
        if (!o || json_array_append_new(blocks, o)) {
            json_decref(blocks);
            return NULL;
        }
    }
    if (!blocks)
        return NULL;
    char hash[24];
    snprintf(hash, sizeof(hash), "0x%016llx", (unsigned long long)plan->sig_hash);
    json_t *o =
        json_pack("{s:s, s:I, s:i, s:s, s:i, s:i, s:o, s:s, s:o}", "kind", "plan", "from_iteration",
                  (json_int_t)from_iteration, "version", (int)plan->version, "policy",
                  prophet_log_policy_name(plan->policy), "n_calls", (int)plan->n_calls, "n_blocks",
                  (int)nb, "predicted_iteration_us", num(plan->predicted_iteration_us), "sig_hash",
                  hash, "blocks", blocks);
    json_t *t = o ? prophet_log_json_trial(&plan->trial) : NULL;
    if (t && json_object_set_new(o, "trial", t) != 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}

int prophet_log_call_cmp(const void *a, const void *b)
{
    const prophet_log_call_t *x = a, *y = b;
    if (x->index != y->index)
        return x->index < y->index ? -1 : 1;
    if (x->comm_id != y->comm_id)
        return x->comm_id < y->comm_id ? -1 : 1;
    return x->arrival_us < y->arrival_us ? -1 : (x->arrival_us > y->arrival_us);
}

int64_t prophet_log_step_of(int64_t bytes_before, int64_t period_bytes, int *exact)
{
    if (exact)
        *exact = 0;
    if (bytes_before < 0 || period_bytes <= 0)
        return -1;
    int64_t slack = period_bytes / 256, step = (bytes_before + slack) / period_bytes;
    if (exact)
        *exact = bytes_before + slack - step * period_bytes <= 2 * slack;
    return step;
}

json_t *prophet_log_json_iteration(uint64_t iteration, const prophet_log_call_t *calls, size_t n,
                                   uint64_t dropped_total, int64_t bytes_before)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < n; i++) {
        const prophet_log_call_t *c = &calls[i];
        json_t *index = c->index == UINT32_MAX ? json_null() : json_integer(c->index);
        json_t *o = json_pack("{s:o, s:I, s:I, s:i, s:i, s:I, s:I, s:I, s:I, s:I}", "index", index,
                              "comm_id", (json_int_t)c->comm_id, "bytes", (json_int_t)c->bytes,
                              "block", (int)c->block, "deferred", c->deferred ? 1 : 0, "arrival_us",
                              (json_int_t)c->arrival_us, "ready_us", (json_int_t)c->ready_us,
                              "release_us", (json_int_t)c->release_us, "launch_us",
                              (json_int_t)c->launch_us, "complete_us", (json_int_t)c->complete_us);
        if (!o || json_array_append_new(arr, o)) {
            json_decref(arr);
            return NULL;
        }
    }
    if (!arr)
        return NULL;
    json_t *o =
        json_pack("{s:s, s:I, s:I, s:o}", "kind", "iteration", "iteration", (json_int_t)iteration,
                  "dropped_total", (json_int_t)dropped_total, "calls", arr);
    if (o && bytes_before >= 0 &&
        json_object_set_new(o, "bytes_before", json_integer((json_int_t)bytes_before)) != 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}
