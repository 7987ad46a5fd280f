/* Tuning advice: DDP bucket_cap_mb and Horovod's fusion threshold and cycle time, chosen by
 * simulating each candidate on the learned profile with the network model (sched/ planners and
 * simulator). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "report.h"

#define MIB (1024.0 * 1024.0)

static const char *const policy_names[PROPHET_POLICY_COUNT] = {
    PROPHET_VALUES_policy(PROPHET_ENUM_NAME)};

const char *rep_policy_name(int policy)
{
    return policy >= 0 && policy < PROPHET_POLICY_COUNT ? policy_names[policy] : "?";
}

/* Rebuilds a profile from the logged iterations when the log holds none: the median readiness
 * offset of each call index from the iteration's first arrival. */
static int profile_from_iterations(const rep_log_t *log, const rep_summary_t *sum,
                                   prophet_profile_t *p)
{
    /* the most common iteration length */
    size_t best_n = 0, best_count = 0;
    for (size_t i = 0; i < log->n_iters; i++) {
        size_t n = log->iters[i].n, count = 0;
        for (size_t j = 0; j < log->n_iters; j++)
            count += log->iters[j].n == n;
        int known = 1;
        for (size_t j = 0; j < n; j++)
            known &= log->iters[i].calls[j].index == j;
        if (known && n > 0 && n <= PROPHET_MAX_CALLS && count > best_count) {
            best_n = n;
            best_count = count;
        }
    }
    if (best_n == 0)
        return -1;
    double *v = malloc(best_count * sizeof(*v));
    if (!v)
        return -1;
    memset(p, 0, sizeof(*p));
    p->n_calls = (uint32_t)best_n;
    const rep_iter_t *last = NULL;
    for (size_t i = 0; i < log->n_iters; i++)
        if (log->iters[i].n == best_n && log->iters[i].calls[0].index == 0)
            last = &log->iters[i];
    for (size_t k = 0; k < best_n; k++) {
        size_t m = 0;
        for (size_t i = 0; i < log->n_iters; i++) {
            const rep_iter_t *it = &log->iters[i];
            if (it->n != best_n || it->calls[k].index != k)
                continue;
            int64_t t0 = 0;
            for (size_t j = 0; j < it->n; j++)
                if (it->calls[j].arrival_us && (!t0 || it->calls[j].arrival_us < t0))
                    t0 = it->calls[j].arrival_us;
            const prophet_log_call_t *c = &it->calls[k];
            int64_t r = c->ready_us ? c->ready_us : c->arrival_us;
            if (t0 && r >= t0)
                v[m++] = (double)(r - t0);
        }
        p->ready_us[k] = m ? rep_quantile(v, m, 0.5) : (k ? p->ready_us[k - 1] : 0);
        if (k && p->ready_us[k] < p->ready_us[k - 1])
            p->ready_us[k] = p->ready_us[k - 1];
        const prophet_log_call_t *c = &last->calls[k];
        p->sig[k] = (prophet_call_sig_t){
            .comm_id = c->comm_id, .count = c->bytes / 4, .dtype = 7, .op = 0, .bytes = c->bytes};
        p->priority[k] = (uint32_t)(best_n - 1 - k);
    }
    free(v);
    p->iteration_us = isfinite(sum->iter_median_us) ? sum->iter_median_us : 0;
    p->iterations_seen = (uint32_t)best_count;
#ifdef PROPHET_REPORT_HAVE_SCHED
    if (prophet_steps_detect(p->ready_us, p->n_calls, 2.0, p->steps, &p->n_steps) != 0)
#endif
    {
        p->n_steps = 1;
        p->steps[0] = (prophet_step_t){0, p->n_calls - 1, p->ready_us[p->n_calls - 1], 0};
    }
    return 0;
}

static int pick_net(const rep_log_t *log, const rep_summary_t *sum, prophet_net_t *net)
{
    for (size_t i = log->n_nets; i-- > 0;) {
        const rep_net_t *n = &log->nets[i];
        if (strcmp(n->source, "default") != 0 && isfinite(n->bandwidth_Bps) &&
            n->bandwidth_Bps > 0) {
            net->bandwidth_Bps = n->bandwidth_Bps;
            net->alpha_us = isfinite(n->alpha_us) && n->alpha_us > 0 ? n->alpha_us : 0;
            net->source = !strcmp(n->source, "ebpf")    ? PROPHET_NET_EBPF
                          : !strcmp(n->source, "fixed") ? PROPHET_NET_FIXED
                                                        : PROPHET_NET_FITTED;
            return 0;
        }
    }
    if (sum->have_fit && sum->fit.bandwidth_Bps > 0) {
        *net = sum->fit;
        return 0;
    }
    for (size_t i = log->n_nets; i-- > 0;)
        if (isfinite(log->nets[i].bandwidth_Bps) && log->nets[i].bandwidth_Bps > 0) {
            net->bandwidth_Bps = log->nets[i].bandwidth_Bps;
            net->alpha_us = isfinite(log->nets[i].alpha_us) ? log->nets[i].alpha_us : 0;
            net->source = PROPHET_NET_DEFAULT;
            return 0;
        }
    return -1;
}

#ifdef PROPHET_REPORT_HAVE_SCHED
static double simulate(const prophet_planner_opts_t *po, const prophet_profile_t *p,
                       const prophet_net_t *net, prophet_plan_t *plan)
{
    prophet_sim_opts_t so = {.ranks = po->ranks, .wait_per_layer = 0};
    prophet_sim_result_t r;
    if (prophet_plan_make(po, p, net, plan) != 0 || prophet_sim_run(&so, p, net, plan, &r) != 0)
        return NAN;
    return r.iteration_us;
}

static void search(int nranks, const prophet_profile_t *p, rep_advice_t *a)
{
    static const double bucket_mb[] = {25, 1, 2, 4, 5, 8, 10, 16, 20, 32, 50, 64, 100, 128, 256};
    static const double fusion_mb[] = {64, 1, 2, 4, 8, 16, 32, 128, 256};
    static const double cycle_ms[] = {1, 0.5, 2, 3.5, 5, 7.5, 10, 20};
    prophet_plan_t *plan = malloc(sizeof(*plan));
    if (!plan) {
        snprintf(a->why, sizeof(a->why), "out of memory");
        return;
    }
    prophet_planner_opts_t po = {.ranks = (uint32_t)(nranks > 0 ? nranks : 1)};
    a->bucket_us = INFINITY;
    po.policy = PROPHET_POLICY_BUCKETS;
    for (size_t i = 0; i < sizeof(bucket_mb) / sizeof(*bucket_mb); i++) {
        po.bucket_bytes = (uint64_t)(bucket_mb[i] * MIB);
        double t = simulate(&po, p, &a->net, plan);
        if (i == 0)
            a->bucket_default_us = t;
        if (isfinite(t) && t < a->bucket_us * 0.9995) {
            a->bucket_us = t;
            a->bucket_mb = bucket_mb[i];
        }
    }
    a->fusion_us = INFINITY;
    po.policy = PROPHET_POLICY_FUSION;
    for (size_t i = 0; i < sizeof(fusion_mb) / sizeof(*fusion_mb); i++)
        for (size_t j = 0; j < sizeof(cycle_ms) / sizeof(*cycle_ms); j++) {
            po.fusion_bytes = (uint64_t)(fusion_mb[i] * MIB);
            po.cycle_us = (uint32_t)(cycle_ms[j] * 1000);
            double t = simulate(&po, p, &a->net, plan);
            if (i == 0 && j == 0)
                a->fusion_default_us = t;
            if (isfinite(t) && t < a->fusion_us * 0.9995) {
                a->fusion_us = t;
                a->fusion_bytes = po.fusion_bytes;
                a->cycle_ms = cycle_ms[j];
            }
        }
    po.policy = PROPHET_POLICY_PROPHET;
    a->prophet_us = simulate(&po, p, &a->net, plan);
    po.policy = PROPHET_POLICY_OPTIMAL;
    a->optimal_us = simulate(&po, p, &a->net, plan);
    po.policy = PROPHET_POLICY_PASSTHROUGH;
    a->passthrough_us = simulate(&po, p, &a->net, plan);
    /* every policy at its default knobs, as prophet-sim runs it */
    for (int k = 0; k < PROPHET_POLICY_COUNT; k++) {
        prophet_planner_opts_t dflt = {.ranks = po.ranks, .policy = (prophet_policy_t)k};
        a->policy_us[k] = simulate(&dflt, p, &a->net, plan);
    }
    free(plan);
    if (!isfinite(a->bucket_us) || !isfinite(a->fusion_us)) {
        snprintf(a->why, sizeof(a->why), "the simulator rejected the profile");
        return;
    }
    a->available = 1;
}
#endif

static void advice_init(rep_advice_t *a)
{
    memset(a, 0, sizeof(*a));
    a->bucket_us = a->fusion_us = a->prophet_us = a->optimal_us = a->passthrough_us = NAN;
    a->bucket_default_us = a->fusion_default_us = NAN;
    for (int k = 0; k < PROPHET_POLICY_COUNT; k++)
        a->policy_us[k] = NAN;
}

/* The logged profile (1), one rebuilt from the iterations (0), or -1. */
static int rank_profile(const rep_log_t *log, const rep_summary_t *sum, prophet_profile_t *p)
{
    if (log->profile && log->profile->n_calls > 0) {
        memcpy(p, log->profile, sizeof(*p));
        return 1;
    }
    return profile_from_iterations(log, sum, p) == 0 ? 0 : -1;
}

static void advise_profile(int nranks, const prophet_profile_t *p, rep_advice_t *a)
{
#ifdef PROPHET_REPORT_HAVE_SCHED
    search(nranks, p, a);
#else
    (void)nranks, (void)p;
    snprintf(a->why, sizeof(a->why), "prophet-report was built without the sched library");
#endif
}

static int same_calls(const prophet_profile_t *a, const prophet_profile_t *b)
{
    if (a->n_calls != b->n_calls)
        return 0;
    for (uint32_t i = 0; i < a->n_calls; i++)
        if (a->sig[i].bytes != b->sig[i].bytes)
            return 0;
    return 1;
}

static int cmp_dbl(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : (a > b);
}

static double median_of(double *v, size_t n)
{
    qsort(v, n, sizeof(*v), cmp_dbl);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The job's profile (each call's latest readiness over the ranks whose calls match) and network
 * (the ranks' median model). 0, or -1 with a->why set. */
static int build_job(rep_log_t *const *logs, const rep_summary_t *sums, size_t n,
                     prophet_profile_t *job, rep_advice_t *a)
{
    prophet_profile_t *p = malloc(sizeof(*p));
    double *bw = calloc(n + 1, sizeof(*bw)), *alpha = calloc(n + 1, sizeof(*alpha));
    size_t nb = 0;
    int nranks = 1, have = 0, rc = -1;
    if (!p || !bw || !alpha) {
        snprintf(a->why, sizeof(a->why), "out of memory");
        goto out;
    }
    a->profile_from_log = 1;
    for (size_t k = 0; k < n; k++) {
        prophet_net_t net;
        int from = rank_profile(logs[k], &sums[k], p);
        if (logs[k]->nranks > nranks)
            nranks = logs[k]->nranks;
        if (from < 0 || (have && !same_calls(job, p)))
            continue;
        if (!have) {
            memcpy(job, p, sizeof(*job));
            have = 1;
        } else {
            for (uint32_t i = 0; i < job->n_calls; i++) {
                if (p->ready_us[i] > job->ready_us[i])
                    job->ready_us[i] = p->ready_us[i];
                if (p->spread_us[i] > job->spread_us[i])
                    job->spread_us[i] = p->spread_us[i];
            }
            if (p->iteration_us > job->iteration_us)
                job->iteration_us = p->iteration_us;
        }
        a->profile_from_log &= from == 1;
        a->ranks_used++;
        if (pick_net(logs[k], &sums[k], &net) == 0) {
            if (nb == 0)
                a->net.source = net.source;
            bw[nb] = net.bandwidth_Bps;
            alpha[nb++] = net.alpha_us;
        }
    }
    a->nranks = nranks;
    if (!have) {
        snprintf(a->why, sizeof(a->why),
                 "no learned profile and no complete iteration in the logs");
        goto out;
    }
    if (nb == 0) {
        snprintf(a->why, sizeof(a->why), "no network model and no timed block in the logs");
        goto out;
    }
    a->net.bandwidth_Bps = median_of(bw, nb);
    a->net.alpha_us = median_of(alpha, nb);
    job->backward_us = 0;
    a->n_calls = job->n_calls;
    for (uint32_t i = 0; i < job->n_calls; i++)
        a->total_bytes += job->sig[i].bytes;
    rc = 0;
out:
    free(p);
    free(bw);
    free(alpha);
    return rc;
}

/* The profile as prophet-profile/1 text (every number with 17 digits: read back, it is the same
 * double); NULL when out of memory. */
static char *profile_text(const prophet_profile_t *p)
{
    json_t *tensors = json_array(), *root;
    char name[32], *text;
    for (uint32_t i = 0; tensors && i < p->n_calls; i++) {
        snprintf(name, sizeof(name), "call %u", i);
        json_array_append_new(
            tensors, json_pack("{s:s, s:I, s:I, s:I, s:f}", "name", name, "elements",
                               (json_int_t)p->sig[i].count, "bytes", (json_int_t)p->sig[i].bytes,
                               "priority", (json_int_t)p->priority[i], "ready_us", p->ready_us[i]));
    }
    root = json_pack("{s:s, s:s, s:f, s:f, s:o}", "format", "prophet-profile/1", "model",
                     "the job, from its schedule logs (prophet-report --profile-out)", "forward_us",
                     isfinite(p->forward_us) && p->forward_us > 0 ? p->forward_us : 0.0,
                     "backward_us", p->backward_us, "tensors", tensors);
    if (!root)
        return NULL;
    text = json_dumps(root, JSON_INDENT(1) | JSON_REAL_PRECISION(17));
    json_decref(root);
    return text;
}

void rep_advise_job(rep_log_t *const *logs, const rep_summary_t *sums, size_t n, rep_advice_t *a)
{
    advice_init(a);
    prophet_profile_t *job = malloc(sizeof(*job));
    if (!job) {
        snprintf(a->why, sizeof(a->why), "out of memory");
        return;
    }
    if (build_job(logs, sums, n, job, a) == 0) {
#ifdef PROPHET_REPORT_HAVE_SCHED
        /* predicted from the text --profile-out writes, read back as prophet-sim reads it */
        char *text = profile_text(job), err[160];
        prophet_profile_t *back = malloc(sizeof(*back));
        if (text && back &&
            prophet_profile_from_json(text, strlen(text), back, err, sizeof(err)) == 0)
            memcpy(job, back, sizeof(*job));
        free(back);
        free(text);
#endif
        advise_profile(a->nranks, job, a);
    }
    free(job);
}

int rep_job_profile_write(rep_log_t *const *logs, const rep_summary_t *sums, size_t n,
                          const char *path, const char **why)
{
    rep_advice_t *a = malloc(sizeof(*a));
    prophet_profile_t *job = malloc(sizeof(*job));
    char *text = NULL;
    FILE *f = NULL;
    int rc = -1;
    *why = "out of memory";
    if (!a || !job)
        goto out;
    advice_init(a);
    if (build_job(logs, sums, n, job, a) != 0) {
        *why = "no learned profile or network in the logs";
        goto out;
    }
    text = profile_text(job);
    if (!text)
        goto out;
    *why = "cannot be written";
    f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fputc('\n', f) < 0)
        goto out;
    rc = fclose(f);
    f = NULL;
out:
    if (f)
        fclose(f);
    free(text);
    free(a);
    free(job);
    return rc;
}

void rep_advise(const rep_log_t *log, const rep_summary_t *sum, rep_advice_t *a)
{
    advice_init(a);
    prophet_profile_t *p = malloc(sizeof(*p));
    if (!p) {
        snprintf(a->why, sizeof(a->why), "out of memory");
        return;
    }
    int from = rank_profile(log, sum, p);
    if (from < 0) {
        snprintf(a->why, sizeof(a->why), "no learned profile and no complete iteration in the log");
        free(p);
        return;
    }
    a->profile_from_log = from;
    a->ranks_used = 1;
    a->n_calls = p->n_calls;
    for (uint32_t i = 0; i < p->n_calls; i++)
        a->total_bytes += p->sig[i].bytes;
    if (pick_net(log, sum, &a->net) != 0) {
        snprintf(a->why, sizeof(a->why), "no network model and no timed block in the log");
        free(p);
        return;
    }
    a->nranks = log->nranks;
    advise_profile(log->nranks, p, a);
    free(p);
}
