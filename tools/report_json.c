/* prophet-report --json: the job summary (with the plans and trials) and each rank's detail. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report.h"

static json_t *jnum(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static json_t *jstep(int64_t step)
{
    return step >= 0 ? json_integer((json_int_t)step) : json_null();
}

static const char *net_source(prophet_net_source_t s)
{
    static const char *const names[] = {"default", "fitted", "ebpf", "fixed"};
    return (unsigned)s < 4 ? names[s] : "?";
}

/* every policy at its default knobs, and the network in prophet-sim's terms: --bandwidth is the
 * ring's link rate, of which the model's all-reduce bandwidth is N / (2 (N - 1)) */
static json_t *json_predicted(const rep_advice_t *a)
{
    json_t *o = json_object();
    int n = a->nranks > 0 ? a->nranks : 1;
    for (int k = 0; o && k < PROPHET_POLICY_COUNT; k++)
        json_object_set_new(o, rep_policy_name(k), jnum(a->policy_us[k]));
    json_object_set_new(o, "ranks", json_integer(n));
    json_object_set_new(o, "alpha_us", jnum(a->net.alpha_us));
    json_object_set_new(
        o, "link_Bps",
        jnum(n < 2 ? a->net.bandwidth_Bps : a->net.bandwidth_Bps * 2.0 * (n - 1) / n));
    return o;
}

json_t *rep_json_advice(const rep_advice_t *a)
{
    if (!a->available)
        return json_pack("{s:b, s:s}", "available", 0, "why", a->why);
    json_t *o = json_pack(
        "{s:b, s:s, s:i, s:i, s:I, s:{s:o, s:o, s:s}, s:{s:f, s:o, s:o}, s:{s:I, s:f, s:o, s:o}, "
        "s:o, s:o, s:o}",
        "available", 1, "profile",
        a->ranks_used > 1 ? "job" : (a->profile_from_log ? "logged" : "rebuilt"), "ranks_used",
        a->ranks_used, "n_calls", (int)a->n_calls, "total_bytes", (json_int_t)a->total_bytes, "net",
        "alpha_us", jnum(a->net.alpha_us), "bandwidth_Bps", jnum(a->net.bandwidth_Bps), "source",
        net_source(a->net.source), "ddp", "bucket_cap_mb", a->bucket_mb, "predicted_us",
        jnum(a->bucket_us), "default_predicted_us", jnum(a->bucket_default_us), "horovod",
        "fusion_threshold_bytes", (json_int_t)a->fusion_bytes, "cycle_time_ms", a->cycle_ms,
        "predicted_us", jnum(a->fusion_us), "default_predicted_us", jnum(a->fusion_default_us),
        "prophet_predicted_us", jnum(a->prophet_us), "optimal_predicted_us", jnum(a->optimal_us),
        "passthrough_predicted_us", jnum(a->passthrough_us));
    if (o)
        json_object_set_new(o, "predicted_by_policy_us", json_predicted(a));
    return o;
}

static json_t *json_spread(const rep_spread_t *s)
{
    return json_pack("{s:i, s:o, s:o, s:o, s:o, s:o}", "ranks", (int)s->n, "min", jnum(s->min),
                     "median", jnum(s->median), "max", jnum(s->max), "min_rank",
                     s->n ? json_integer(s->min_rank) : json_null(), "max_rank",
                     s->n ? json_integer(s->max_rank) : json_null());
}

static json_t *json_plan(const rep_log_t *log, const rep_plan_t *p)
{
    json_t *trial = json_null();
    if (p->trial) {
        json_t *judged = p->judged[0] ? json_pack("{s:s, s:I, s:I}", "candidate", p->judged,
                                                  "samples", (json_int_t)p->judged_samples,
                                                  "median_us", (json_int_t)p->judged_us)
                                      : json_null();
        trial =
            json_pack("{s:s, s:s, s:I, s:o, s:o}", "phase", p->trial == 2 ? "chosen" : "trial",
                      "candidate", p->candidate, "round", (json_int_t)p->round, "judged", judged,
                      "chosen_us", p->chosen_us >= 0 ? json_integer(p->chosen_us) : json_null());
    }
    return json_pack(
        "{s:i, s:s, s:s, s:s, s:I, s:o, s:i, s:i, s:o, s:o}", "version", (int)p->version, "mark",
        rep_plan_mark(p), "candidate", p->trial ? p->candidate : p->policy, "policy", p->policy,
        "from_iteration", (json_int_t)p->from_iteration, "from_step",
        jstep(rep_step_of(log, p->from_iteration)), "n_blocks", (int)p->n_blocks, "n_calls",
        (int)p->n_calls, "predicted_us", jnum(p->predicted_us), "trial", trial);
}

static json_t *json_plans(const rep_log_t *log)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < log->n_plans; i++)
        if (json_array_append_new(a, json_plan(log, &log->plans[i]))) {
            json_decref(a);
            return NULL;
        }
    return a;
}

static json_t *json_rounds(const rep_job_t *j)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < j->n_rounds; i++) {
        const rep_round_t *r = &j->rounds[i];
        json_t *timed = json_array();
        for (size_t t = 0; timed && t < r->n_timed; t++)
            json_array_append_new(timed,
                                  json_pack("{s:s, s:I, s:I}", "candidate", r->timed[t].candidate,
                                            "samples", (json_int_t)r->timed[t].samples, "median_us",
                                            (json_int_t)r->timed[t].median_us));
        json_t *kept = r->kept
                           ? json_pack("{s:s, s:i, s:o}", "candidate", r->kept->candidate,
                                       "version", (int)r->kept->version, "measured_us",
                                       r->kept->chosen_us >= 0 ? json_integer(r->kept->chosen_us)
                                                               : json_null())
                           : json_null();
        if (json_array_append_new(a, json_pack("{s:I, s:o, s:o}", "round", (json_int_t)r->round,
                                               "timed", timed, "kept", kept))) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

static json_t *json_steps(const rep_job_t *j)
{
    const rep_log_t *ref = j->ref;
    json_t *segs = json_array();
    for (size_t i = 0; segs && i < ref->n_iters;) {
        if (ref->iters[i].step < 0 || !ref->iters[i].step_exact) {
            i++;
            continue;
        }
        long long off = (long long)ref->iters[i].iteration - ref->iters[i].step;
        size_t k = i;
        while (k + 1 < ref->n_iters && ref->iters[k + 1].step >= 0 &&
               ref->iters[k + 1].step_exact &&
               (long long)ref->iters[k + 1].iteration - ref->iters[k + 1].step == off)
            k++;
        json_array_append_new(segs,
                              json_pack("{s:I, s:I, s:I, s:I, s:I}", "first_iteration",
                                        (json_int_t)ref->iters[i].iteration, "last_iteration",
                                        (json_int_t)ref->iters[k].iteration, "first_step",
                                        (json_int_t)ref->iters[i].step, "last_step",
                                        (json_int_t)ref->iters[k].step, "offset", (json_int_t)off));
        i = k + 1;
    }
    return json_pack("{s:b, s:o, s:o, s:i}", "known", j->have_steps, "offset",
                     j->have_steps && j->offset_constant ? json_integer(j->step_offset)
                                                         : json_null(),
                     "segments", segs, "learning_iterations", (int)j->n_learning);
}

static json_t *json_kept(const rep_job_t *j)
{
    if (!j->kept)
        return json_null();
    return json_pack(
        "{s:i, s:s, s:s, s:I, s:I, s:o, s:o}", "version", (int)j->kept->version, "candidate",
        j->kept->candidate, "policy", j->kept->policy, "round", (json_int_t)j->kept->round,
        "from_iteration", (json_int_t)j->kept->from_iteration, "from_step",
        jstep(rep_step_of(j->ref, j->kept->from_iteration)), "measured_us", jnum(j->kept_us));
}

static json_t *json_gain(const rep_job_t *j)
{
    if (!j->kept || !isfinite(j->passthrough_us) || !isfinite(j->kept_us) || j->kept_us <= 0)
        return json_null();
    return json_pack("{s:f, s:f, s:f, s:I}", "speedup", j->passthrough_us / j->kept_us, "kept_us",
                     j->kept_us, "passthrough_us", j->passthrough_us, "round",
                     (json_int_t)j->passthrough_round);
}

static json_t *json_ended_in_trial(const rep_job_t *j)
{
    if (!j->last || j->last->trial != 1)
        return json_null();
    return json_pack("{s:I, s:i, s:s, s:I, s:o}", "round", (json_int_t)j->last->round, "version",
                     (int)j->last->version, "candidate", j->last->candidate, "from_iteration",
                     (json_int_t)j->last->from_iteration, "from_step",
                     jstep(rep_step_of(j->ref, j->last->from_iteration)));
}

json_t *rep_json_job(const rep_job_t *j, rep_log_t *const *logs, const rep_summary_t *sums,
                     size_t n)
{
    char v[32];
    json_t *per_rank = json_array();
    for (size_t k = 0; per_rank && k < n; k++)
        json_array_append_new(per_rank,
                              json_pack("{s:i, s:s, s:o}", "rank", logs[k]->rank, "log",
                                        logs[k]->path, "median_us", jnum(sums[k].iter_median_us)));
    json_t *it = json_spread(&j->iter_us);
    if (it) {
        json_object_set_new(it, "slowest_rank",
                            j->iter_us.n ? json_integer(j->iter_us.max_rank) : json_null());
        json_object_set(it, "per_rank", per_rank);
    }
    json_t *net = json_pack("{s:o, s:o, s:s, s:o, s:o}", "model_Bps", json_spread(&j->model_Bps),
                            "model_alpha_us", json_spread(&j->model_alpha_us), "model_source",
                            j->model_source, "probe_Bps", json_spread(&j->probe_Bps), "fitted_Bps",
                            json_spread(&j->fitted_Bps));
    json_decref(per_rank);
    return json_pack("{s:i, s:i, s:s, s:s, s:s, s:o, s:o, s:b, s:o, s:o, s:o, s:o, s:o, s:o, "
                     "s:o, s:o}",
                     "ranks", j->nranks, "logs_read", (int)n, "nccl_version",
                     rep_nccl_version(j->ref->nccl_version, v, sizeof(v)), "policy", j->ref->policy,
                     "gate", j->ref->gate, "steps", json_steps(j), "iteration_time_us", it,
                     "plans_agree", !j->plans_differ, "plans_differ_rank",
                     j->plans_differ ? json_integer(j->differ_rank) : json_null(), "plans",
                     json_plans(j->ref), "trials", json_rounds(j), "kept", json_kept(j),
                     "gain_over_passthrough", json_gain(j), "ended_in_trial",
                     json_ended_in_trial(j), "network", net, "advice", rep_json_advice(&j->advice));
}

json_t *rep_json_rank(const rep_log_t *log, const rep_summary_t *s, const rep_advice_t *a)
{
    char v[32];
    json_t *net = s->have_net
                      ? json_pack("{s:o, s:o, s:s, s:o}", "bandwidth_Bps",
                                  jnum(s->net.bandwidth_Bps), "alpha_us", jnum(s->net.alpha_us),
                                  "source", s->net.source, "probe_Bps", jnum(s->net.probe_Bps))
                      : json_null();
    const rep_iter_t *first = log->n_iters ? &log->iters[0] : NULL;
    const rep_iter_t *last = log->n_iters ? &log->iters[log->n_iters - 1] : NULL;
    int64_t s0, s1;
    rep_step_range(log, &s0, &s1);
    return json_pack(
        "{s:s, s:i, s:i, s:s, s:i, s:s, s:s, s:s, s:b, s:b, s:I, s:I, s:I, s:o, s:o, s:I, "
        "s:{s:o, s:o, s:i}, s:o, s:{s:o, s:o}, s:{s:o, s:o, s:i}, s:{s:o, s:o, s:o}, s:o, s:o, "
        "s:o}",
        "log", log->path, "rank", log->rank, "nranks", log->nranks, "host", log->host, "pid",
        log->pid, "nccl_version", rep_nccl_version(log->nccl_version, v, sizeof(v)), "policy",
        log->policy, "gate", log->gate, "complete", log->complete, "recovered", log->recovered,
        "iterations", (json_int_t)log->n_iters, "first_iteration",
        (json_int_t)(first ? first->iteration : 0), "last_iteration",
        (json_int_t)(last ? last->iteration : 0), "first_step", jstep(s0), "last_step", jstep(s1),
        "calls_dropped", (json_int_t)log->calls_dropped, "iteration_time_us", "median",
        jnum(s->iter_median_us), "p90", jnum(s->iter_p90_us), "samples", (int)s->iter_samples,
        "network_busy_fraction", jnum(s->busy_fraction), "idle_gap_us", "median",
        jnum(s->idle_wait_median_us), "p90", jnum(s->idle_wait_p90_us), "blocks",
        "per_iteration_median", jnum(s->blocks_median), "members_mean", jnum(s->members_mean),
        "members_max", (int)s->members_max, "bandwidth", "fitted_Bps",
        jnum(s->have_fit ? s->fit.bandwidth_Bps : NAN), "fitted_alpha_us",
        jnum(s->have_fit ? s->fit.alpha_us : NAN), "block_median_Bps", jnum(s->observed_Bps),
        "net_model", net, "plans", json_plans(log), "advice", rep_json_advice(a));
}
