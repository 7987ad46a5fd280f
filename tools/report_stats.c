/* Per-iteration and per-rank statistics of a schedule log. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

typedef struct span {
    double a, b;
} span_t;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : (x > y);
}

double rep_quantile(double *v, size_t n, double q)
{
    if (n == 0)
        return NAN;
    qsort(v, n, sizeof(*v), cmp_double);
    double pos = q * (double)(n - 1);
    size_t i = (size_t)pos;
    if (i + 1 >= n)
        return v[n - 1];
    return v[i] + (pos - (double)i) * (v[i + 1] - v[i]);
}

static int cmp_span(const void *a, const void *b)
{
    const span_t *x = a, *y = b;
    return x->a < y->a ? -1 : (x->a > y->a);
}

/* Sorts and merges overlapping spans in place; returns the new count. */
static size_t merge_spans(span_t *s, size_t n)
{
    if (n == 0)
        return 0;
    qsort(s, n, sizeof(*s), cmp_span);
    size_t k = 0;
    for (size_t i = 1; i < n; i++) {
        if (s[i].a <= s[k].b) {
            if (s[i].b > s[k].b)
                s[k].b = s[i].b;
        } else {
            s[++k] = s[i];
        }
    }
    return k + 1;
}

static double total(const span_t *s, size_t n)
{
    double t = 0;
    for (size_t i = 0; i < n; i++)
        t += s[i].b - s[i].a;
    return t;
}

/* Length of the intersection of two merged span lists. */
static double overlap(const span_t *x, size_t nx, const span_t *y, size_t ny)
{
    double t = 0;
    size_t i = 0, j = 0;
    while (i < nx && j < ny) {
        double a = fmax(x[i].a, y[j].a), b = fmin(x[i].b, y[j].b);
        if (b > a)
            t += b - a;
        if (x[i].b < y[j].b)
            i++;
        else
            j++;
    }
    return t;
}

static int cmp_block(const void *a, const void *b)
{
    const prophet_log_call_t *x = a, *y = b;
    if (x->comm_id != y->comm_id)
        return x->comm_id < y->comm_id ? -1 : 1;
    return x->block < y->block ? -1 : (x->block > y->block);
}

/* The busy spans (first launch to last completion of each block) and the wait spans (readiness
 * to launch of each call) of `it`, each merged; the caller frees both. Counts the blocks and their
 * largest membership into o unless it is NULL. -1 when out of memory. */
static int block_spans(const rep_iter_t *it, span_t **busy_out, size_t *nb_out, span_t **wait_out,
                       size_t *nw_out, rep_iter_stats_t *o)
{
    prophet_log_call_t *v = malloc(it->n * sizeof(*v));
    span_t *busy = malloc(it->n * sizeof(*busy));
    span_t *wait = malloc(it->n * sizeof(*wait));
    if (!v || !busy || !wait) {
        free(v), free(busy), free(wait);
        return -1;
    }
    memcpy(v, it->calls, it->n * sizeof(*v));
    qsort(v, it->n, sizeof(*v), cmp_block);
    size_t nb = 0, nw = 0;
    for (size_t i = 0; i < it->n;) {
        size_t j = i;
        double launch = INFINITY, done = -INFINITY;
        for (; j < it->n && v[j].comm_id == v[i].comm_id && v[j].block == v[i].block; j++) {
            const prophet_log_call_t *c = &v[j];
            if (c->launch_us && c->launch_us < launch)
                launch = (double)c->launch_us;
            if (c->complete_us && c->complete_us > done)
                done = (double)c->complete_us;
            double ready = (double)(c->ready_us ? c->ready_us : c->arrival_us);
            if (ready > 0 && c->launch_us > 0 && (double)c->launch_us > ready)
                wait[nw++] = (span_t){ready, (double)c->launch_us};
        }
        if (o) {
            uint32_t members = (uint32_t)(j - i);
            if (members > o->max_members)
                o->max_members = members;
            o->n_blocks++;
        }
        if (isfinite(launch) && done >= launch)
            busy[nb++] = (span_t){launch, done};
        i = j;
    }
    free(v);
    *busy_out = busy;
    *nb_out = merge_spans(busy, nb);
    *wait_out = wait;
    *nw_out = merge_spans(wait, nw);
    return 0;
}

int rep_iter_stats(const rep_iter_t *it, rep_iter_stats_t *o)
{
    memset(o, 0, sizeof(*o));
    o->iteration = it->iteration;
    o->n_calls = (uint32_t)it->n;
    if (it->n == 0)
        return -1;
    double start = INFINITY, end = -INFINITY;
    for (size_t i = 0; i < it->n; i++) {
        const prophet_log_call_t *c = &it->calls[i];
        o->bytes += c->bytes;
        double t0 = c->arrival_us ? (double)c->arrival_us
                                  : (c->ready_us ? (double)c->ready_us : (double)c->launch_us);
        if (t0 > 0 && t0 < start)
            start = t0;
        double t1 = (double)(c->complete_us ? c->complete_us : c->launch_us);
        if (t1 > end)
            end = t1;
    }
    span_t *busy, *wait;
    size_t nb, nw;
    if (block_spans(it, &busy, &nb, &wait, &nw, o))
        return -1;
    o->busy_us = total(busy, nb);
    o->idle_wait_us = total(wait, nw) - overlap(wait, nw, busy, nb);
    if (o->idle_wait_us < 0)
        o->idle_wait_us = 0;
    o->start_us = isfinite(start) ? start : 0;
    o->span_us = isfinite(start) && end > start ? end - start : 0;
    free(busy);
    free(wait);
    return 0;
}

/* Least squares dur = alpha + bytes / bw over the blocks of every iteration. */
static void fit_blocks(const rep_log_t *log, rep_summary_t *s)
{
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    size_t n = 0, cap = 0;
    double *rates = NULL;
    for (size_t k = 0; k < log->n_iters; k++) {
        const rep_iter_t *it = &log->iters[k];
        prophet_log_call_t *v = malloc(it->n * sizeof(*v) + 1);
        if (!v)
            break;
        memcpy(v, it->calls, it->n * sizeof(*v));
        qsort(v, it->n, sizeof(*v), cmp_block);
        for (size_t i = 0; i < it->n;) {
            size_t j = i;
            double bytes = 0, launch = INFINITY, done = -INFINITY;
            for (; j < it->n && v[j].comm_id == v[i].comm_id && v[j].block == v[i].block; j++) {
                bytes += (double)v[j].bytes;
                if (v[j].launch_us && v[j].launch_us < launch)
                    launch = (double)v[j].launch_us;
                if (v[j].complete_us && v[j].complete_us > done)
                    done = (double)v[j].complete_us;
            }
            i = j;
            if (!isfinite(launch) || done <= launch || bytes <= 0)
                continue;
            double dur = done - launch;
            if (n == cap) {
                cap = cap ? 2 * cap : 256;
                double *r = realloc(rates, cap * sizeof(*r));
                if (!r)
                    break;
                rates = r;
            }
            rates[n++] = bytes / (dur * 1e-6);
            sx += bytes;
            sy += dur;
            sxx += bytes * bytes;
            sxy += bytes * dur;
        }
        free(v);
    }
    if (n > 0)
        s->observed_Bps = rep_quantile(rates, n, 0.5);
    double den = (double)n * sxx - sx * sx;
    if (n >= 2 && den > 0) {
        double beta = ((double)n * sxy - sx * sy) / den;
        double alpha = (sy - beta * sx) / (double)n;
        if (beta > 0) {
            s->fit.bandwidth_Bps = 1e6 / beta;
            s->fit.alpha_us = alpha > 0 ? alpha : 0;
            s->fit.source = PROPHET_NET_FITTED;
            s->have_fit = 1;
        }
    }
    if (!s->have_fit && n > 0) {
        s->fit.bandwidth_Bps = s->observed_Bps;
        s->fit.alpha_us = 0;
        s->fit.source = PROPHET_NET_FITTED;
        s->have_fit = 1;
    }
    free(rates);
}

int rep_summarize(const rep_log_t *log, rep_summary_t *s)
{
    memset(s, 0, sizeof(*s));
    s->iter_median_us = s->iter_p90_us = s->busy_fraction = NAN;
    s->idle_wait_median_us = s->idle_wait_p90_us = s->blocks_median = s->members_mean = NAN;
    s->observed_Bps = NAN;
    size_t n = log->n_iters;
    s->n_iters = n;
    if (log->n_nets) {
        s->have_net = 1;
        s->net = log->nets[log->n_nets - 1];
    }
    fit_blocks(log, s);
    if (n == 0)
        return 0;
    rep_iter_stats_t *st = calloc(n, sizeof(*st));
    double *a = calloc(n, sizeof(*a)), *b = calloc(n, sizeof(*b)), *c = calloc(n, sizeof(*c));
    double *d = calloc(n, sizeof(*d));
    if (!st || !a || !b || !c || !d) {
        free(st), free(a), free(b), free(c), free(d);
        return -1;
    }
    uint64_t blocks = 0, members = 0;
    for (size_t i = 0; i < n; i++) {
        rep_iter_stats(&log->iters[i], &st[i]);
        blocks += st[i].n_blocks;
        members += st[i].n_calls;
        if (st[i].max_members > s->members_max)
            s->members_max = st[i].max_members;
    }
    size_t np = 0, nf = 0;
    for (size_t i = 0; i < n; i++) {
        double period = st[i].span_us;
        /* iterations numbered while the preload learned are parts of a step, not steps */
        int steps_ok = !log->have_steps ||
                       (log->iters[i].step_exact && i + 1 < n && log->iters[i + 1].step_exact);
        if (i + 1 < n && steps_ok && log->iters[i + 1].iteration == log->iters[i].iteration + 1 &&
            st[i + 1].start_us > st[i].start_us) {
            period = st[i + 1].start_us - st[i].start_us;
            a[np++] = period;
        }
        if (period > 0)
            b[nf++] = st[i].busy_us / period > 1 ? 1 : st[i].busy_us / period;
        c[i] = st[i].idle_wait_us;
        d[i] = st[i].n_blocks;
    }
    if (np == 0) /* no two consecutive iterations: fall back to the spans */
        for (size_t i = 0; i < n; i++)
            if (st[i].span_us > 0)
                a[np++] = st[i].span_us;
    s->iter_samples = (uint32_t)np;
    if (np) {
        s->iter_median_us = rep_quantile(a, np, 0.5);
        s->iter_p90_us = rep_quantile(a, np, 0.9);
    }
    if (nf)
        s->busy_fraction = rep_quantile(b, nf, 0.5);
    s->idle_wait_median_us = rep_quantile(c, n, 0.5);
    s->idle_wait_p90_us = rep_quantile(c, n, 0.9);
    s->blocks_median = rep_quantile(d, n, 0.5);
    s->members_mean = blocks ? (double)members / (double)blocks : NAN;
    free(st), free(a), free(b), free(c), free(d);
    return 0;
}

int rep_idle_spans(const rep_iter_t *it, double *a, double *b, size_t cap, size_t *n_out)
{
    *n_out = 0;
    if (it->n == 0)
        return 0;
    span_t *busy, *wait;
    size_t nb, nw;
    if (block_spans(it, &busy, &nb, &wait, &nw, NULL))
        return -1;
    size_t k = 0;
    for (size_t i = 0; i < nw && k < cap; i++) {
        double s = wait[i].a;
        for (size_t j = 0; j < nb && k < cap && s < wait[i].b; j++) {
            if (busy[j].b <= s || busy[j].a >= wait[i].b)
                continue;
            if (busy[j].a > s) {
                a[k] = s;
                b[k++] = busy[j].a;
            }
            s = busy[j].b;
        }
        if (s < wait[i].b && k < cap) {
            a[k] = s;
            b[k++] = wait[i].b;
        }
    }
    *n_out = k;
    free(busy), free(wait);
    return 0;
}
