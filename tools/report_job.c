/* The job as a whole, from every rank's log: the spread of the ranks' figures, the slowest rank,
 * the steps, the plans and trials (agreed, so taken from the lowest rank and checked against the
 * others) and one piece of advice. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "log_trace.h"
#include "report.h"

const char *rep_plan_mark(const rep_plan_t *p)
{
    return prophet_plan_mark_name(p->trial);
}

/* The spread of v[k] over the ranks where it is finite and positive. */
static void spread(rep_log_t *const *logs, const double *v, size_t n, rep_spread_t *s)
{
    double *x = malloc((n + 1) * sizeof(*x));
    memset(s, 0, sizeof(*s));
    s->min = s->median = s->max = NAN;
    s->min_rank = s->max_rank = -1;
    if (!x)
        return;
    for (size_t k = 0; k < n; k++) {
        if (!isfinite(v[k]) || v[k] <= 0)
            continue;
        x[s->n++] = v[k];
        if (s->min_rank < 0 || v[k] < s->min) {
            s->min = v[k];
            s->min_rank = logs[k]->rank;
        }
        if (s->max_rank < 0 || v[k] > s->max) {
            s->max = v[k];
            s->max_rank = logs[k]->rank;
        }
    }
    if (s->n)
        s->median = rep_quantile(x, s->n, 0.5);
    free(x);
}

static int same_plan(const rep_plan_t *a, const rep_plan_t *b)
{
    return a->from_iteration == b->from_iteration && a->version == b->version &&
           a->n_calls == b->n_calls && a->n_blocks == b->n_blocks &&
           !strcmp(a->policy, b->policy) && a->trial == b->trial &&
           !strcmp(a->candidate, b->candidate) && a->round == b->round &&
           !strcmp(a->judged, b->judged) && a->judged_us == b->judged_us &&
           a->chosen_us == b->chosen_us;
}

/* 1 when b's plans are a's (or the first of them: a log that ends earlier). */
static int same_plans(const rep_log_t *a, const rep_log_t *b)
{
    if (b->n_plans > a->n_plans)
        return 0;
    for (size_t i = 0; i < b->n_plans; i++)
        if (!same_plan(&a->plans[i], &b->plans[i]))
            return 0;
    return 1;
}

static rep_round_t *round_of(rep_job_t *j, long long round)
{
    for (size_t i = 0; i < j->n_rounds; i++)
        if (j->rounds[i].round == round)
            return &j->rounds[i];
    rep_round_t *v = realloc(j->rounds, (j->n_rounds + 1) * sizeof(*v));
    if (!v)
        return NULL;
    j->rounds = v;
    memset(&v[j->n_rounds], 0, sizeof(v[0]));
    v[j->n_rounds].round = round;
    return &v[j->n_rounds++];
}

/* The rounds from the plans: each plan's `judged` is the figure of the candidate whose window
 * closed at its agreement, in the plan's round. */
static int trials(rep_job_t *j)
{
    const rep_log_t *ref = j->ref;
    j->kept_us = j->passthrough_us = NAN;
    j->passthrough_round = -1;
    for (size_t i = 0; i < ref->n_plans; i++) {
        const rep_plan_t *p = &ref->plans[i];
        j->last = p;
        if (!p->trial)
            continue;
        rep_round_t *r = round_of(j, p->round);
        if (!r)
            return -1;
        if (p->judged[0] && r->n_timed < REP_MAX_TIMED) {
            snprintf(r->timed[r->n_timed].candidate, sizeof(r->timed[0].candidate), "%s",
                     p->judged);
            r->timed[r->n_timed].samples = p->judged_samples;
            r->timed[r->n_timed++].median_us = p->judged_us;
        }
        if (p->trial == 2) {
            r->kept = p;
            j->kept = p;
        }
    }
    if (!j->kept)
        return 0;
    if (j->kept->chosen_us >= 0)
        j->kept_us = (double)j->kept->chosen_us;
    /* passthrough's figure: in the kept plan's round if it was timed there, else the latest */
    for (size_t i = 0; i < j->n_rounds; i++)
        for (size_t t = 0; t < j->rounds[i].n_timed; t++) {
            const rep_round_t *r = &j->rounds[i];
            if (strcmp(r->timed[t].candidate, "passthrough") != 0)
                continue;
            if (j->passthrough_round == j->kept->round && r->round != j->kept->round)
                continue;
            j->passthrough_us = (double)r->timed[t].median_us;
            j->passthrough_round = r->round;
        }
    if (!strcmp(j->kept->candidate, "passthrough") && isfinite(j->kept_us)) {
        j->passthrough_us = j->kept_us;
        j->passthrough_round = j->kept->round;
    }
    return 0;
}

/* The mapping of ref's iterations to the job's steps. */
static void steps(rep_job_t *j)
{
    const rep_log_t *ref = j->ref;
    j->offset_constant = 1;
    for (size_t i = 0; i < ref->n_iters; i++) {
        const rep_iter_t *it = &ref->iters[i];
        if (it->step < 0 || !it->step_exact) {
            if (!j->n_learning++)
                j->learning_first = it->iteration;
            j->learning_last = it->iteration;
            continue;
        }
        long long off = (long long)it->iteration - (long long)it->step;
        if (!j->have_steps) {
            j->have_steps = 1;
            j->step_offset = off;
            j->first_iter = it->iteration;
            j->first_step = it->step;
        } else if (off != j->step_offset) {
            j->offset_constant = 0;
        }
        j->last_iter = it->iteration;
        j->last_step = it->step;
    }
}

int rep_job_build(rep_log_t *const *logs, const rep_summary_t *sums, size_t n, rep_job_t *j)
{
    memset(j, 0, sizeof(*j));
    j->n_logs = n;
    if (n == 0)
        return 0;
    double *v = malloc(n * sizeof(*v));
    if (!v)
        return -1;
    /* the plans shown: the lowest rank's among those that logged the most */
    j->ref = logs[0];
    for (size_t k = 1; k < n; k++)
        if (logs[k]->n_plans > j->ref->n_plans)
            j->ref = logs[k];
    j->differ_rank = j->short_rank = -1;
    for (size_t k = 0; k < n; k++) {
        if (logs[k]->nranks > j->nranks)
            j->nranks = logs[k]->nranks;
        if (!j->plans_differ && !same_plans(j->ref, logs[k])) {
            j->plans_differ = 1;
            j->differ_rank = logs[k]->rank;
        } else if (j->short_rank < 0 && logs[k]->n_plans < j->ref->n_plans) {
            j->short_rank = logs[k]->rank;
            j->short_plans = logs[k]->n_plans;
        }
    }
    for (size_t k = 0; k < n; k++)
        v[k] = sums[k].iter_median_us;
    spread(logs, v, n, &j->iter_us);
    for (size_t k = 0; k < n; k++)
        v[k] = sums[k].have_net ? sums[k].net.bandwidth_Bps : NAN;
    spread(logs, v, n, &j->model_Bps);
    for (size_t k = 0; k < n; k++)
        v[k] = sums[k].have_net ? sums[k].net.alpha_us : NAN;
    spread(logs, v, n, &j->model_alpha_us);
    for (size_t k = 0; k < n; k++)
        v[k] = sums[k].have_net ? sums[k].net.probe_Bps : NAN;
    spread(logs, v, n, &j->probe_Bps);
    for (size_t k = 0; k < n; k++)
        v[k] = sums[k].have_fit ? sums[k].fit.bandwidth_Bps : NAN;
    spread(logs, v, n, &j->fitted_Bps);
    free(v);
    snprintf(j->model_source, sizeof(j->model_source), "%s",
             sums[0].have_net ? sums[0].net.source : "");
    steps(j);
    if (trials(j))
        return -1;
    rep_advise_job(logs, sums, n, &j->advice);
    return 0;
}

void rep_job_free(rep_job_t *j)
{
    free(j->rounds);
    memset(j, 0, sizeof(*j));
}
