/* prophet-report --svg: one iteration before the plan and one after it, as two panels of
 * arrivals, readiness and blocks on a common time axis. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

#define W 1100.0
#define LEFT 120.0
#define RIGHT 30.0
#define PANEL_H 200.0
#define TOP 40.0
#define MAX_IDLE 4096

static void xml_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '&':
            fputs("&amp;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        default:
            if ((unsigned char)*s >= 0x20)
                fputc(*s, f);
        }
    }
}

static double iter_start(const rep_iter_t *it)
{
    double t0 = INFINITY;
    for (size_t i = 0; i < it->n; i++) {
        const prophet_log_call_t *c = &it->calls[i];
        double t = (double)(c->arrival_us ? c->arrival_us : c->ready_us);
        if (t > 0 && t < t0)
            t0 = t;
    }
    return isfinite(t0) ? t0 : 0;
}

static double iter_end(const rep_iter_t *it)
{
    double t1 = 0;
    for (size_t i = 0; i < it->n; i++) {
        const prophet_log_call_t *c = &it->calls[i];
        double t = (double)(c->complete_us ? c->complete_us
                                           : (c->launch_us ? c->launch_us : c->arrival_us));
        if (t > t1)
            t1 = t;
    }
    return t1;
}

static double nice_step(double range)
{
    double raw = range / 8, p = pow(10, floor(log10(raw)));
    double m = raw / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

typedef struct scale {
    double t0, span, y;
} scale_t;

static double X(const scale_t *s, double t_us)
{
    double x = LEFT + (t_us - s->t0) / s->span * (W - LEFT - RIGHT);
    return x < LEFT ? LEFT : (x > W - RIGHT ? W - RIGHT : x);
}

static const rep_plan_t *plan_for(const rep_log_t *log, uint64_t iteration)
{
    const rep_plan_t *p = NULL;
    for (size_t i = 0; i < log->n_plans; i++)
        if (log->plans[i].from_iteration <= iteration &&
            (!p || log->plans[i].from_iteration >= p->from_iteration))
            p = &log->plans[i];
    return p;
}

static int cmp_block(const void *a, const void *b)
{
    const prophet_log_call_t *x = a, *y = b;
    if (x->comm_id != y->comm_id)
        return x->comm_id < y->comm_id ? -1 : 1;
    return x->block < y->block ? -1 : (x->block > y->block);
}

static void lane_label(FILE *f, double y, const char *text)
{
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" class=\"lbl\">%s</text>\n",
            LEFT - 8, y, text);
    fprintf(f,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#dddddd\" "
            "stroke-width=\"1\"/>\n",
            LEFT, y + 4, W - RIGHT, y + 4);
}

static int panel(FILE *f, const rep_log_t *log, const rep_iter_t *it, double span_us, double y0,
                 const char *role)
{
    scale_t s = {iter_start(it), span_us, y0};
    const rep_plan_t *plan = plan_for(log, it->iteration);
    uint64_t maxb = 1;
    for (size_t i = 0; i < it->n; i++)
        if (it->calls[i].bytes > maxb)
            maxb = it->calls[i].bytes;
    char title[320], name[64];
    rep_iter_name(log, it->iteration, name, sizeof(name));
    if (plan && plan->trial == 1)
        snprintf(title, sizeof(title),
                 "%s, %s: TRIAL plan v%u (%s, %u blocks), a candidate timed in trial "
                 "round %lld",
                 name, role, plan->version, plan->candidate, plan->n_blocks, plan->round);
    else if (plan && plan->trial == 2)
        snprintf(title, sizeof(title),
                 "%s, %s: KEPT plan v%u (%s, %u blocks), kept by trial "
                 "round %lld",
                 name, role, plan->version, plan->candidate, plan->n_blocks, plan->round);
    else if (plan)
        snprintf(title, sizeof(title), "%s, %s: plan v%u (%s, %u blocks), fixed policy", name, role,
                 plan->version, plan->policy, plan->n_blocks);
    else
        snprintf(title, sizeof(title), "%s, %s: no agreed plan yet (policy %s)", name, role,
                 log->policy);
    fprintf(f, "<g class=\"panel\" data-mark=\"%s\">\n<text x=\"%.1f\" y=\"%.1f\" class=\"ttl\">",
            plan ? rep_plan_mark(plan) : "none", LEFT, y0 + 16);
    xml_text(f, title);
    fputs("</text>\n", f);
    double ya = y0 + 50, yr = y0 + 85, yn = y0 + 135, yax = y0 + 160;
    lane_label(f, ya, "arrivals (host)");
    lane_label(f, yr, "ready (GPU)");
    lane_label(f, yn, "network blocks");
    /* learned step boundaries */
    if (log->profile)
        for (uint32_t k = 0; k < log->profile->n_steps; k++) {
            double t = s.t0 + log->profile->steps[k].ready_us;
            if (!isfinite(t) || t > s.t0 + span_us)
                continue;
            fprintf(f,
                    "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#888888\" "
                    "stroke-dasharray=\"3,3\" stroke-width=\"1\"/>\n",
                    X(&s, t), y0 + 26, X(&s, t), yr + 6);
        }
    /* idle while waiting */
    double *ia = malloc(MAX_IDLE * sizeof(double)), *ib = malloc(MAX_IDLE * sizeof(double));
    size_t ni = 0;
    if (ia && ib && rep_idle_spans(it, ia, ib, MAX_IDLE, &ni) == 0)
        for (size_t k = 0; k < ni; k++)
            fprintf(f,
                    "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"26\" fill=\"#d62728\" "
                    "fill-opacity=\"0.25\"/>\n",
                    X(&s, ia[k]), yn - 22, fmax(X(&s, ib[k]) - X(&s, ia[k]), 0.5));
    free(ia);
    free(ib);
    for (size_t i = 0; i < it->n; i++) {
        const prophet_log_call_t *c = &it->calls[i];
        double h = 4 + 18 * sqrt((double)c->bytes / (double)maxb);
        if (c->arrival_us)
            fprintf(f,
                    "<line x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" stroke=\"#1f77b4\" "
                    "stroke-width=\"1\"/>\n",
                    X(&s, (double)c->arrival_us), ya, X(&s, (double)c->arrival_us), ya - h);
        if (c->ready_us)
            fprintf(f,
                    "<line x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" stroke=\"#2ca02c\" "
                    "stroke-width=\"1\"/>\n",
                    X(&s, (double)c->ready_us), yr, X(&s, (double)c->ready_us), yr - h);
    }
    prophet_log_call_t *v = malloc(it->n * sizeof(*v) + 1);
    if (!v)
        return -1;
    memcpy(v, it->calls, it->n * sizeof(*v));
    qsort(v, it->n, sizeof(*v), cmp_block);
    int shade = 0;
    for (size_t i = 0; i < it->n;) {
        size_t j = i;
        double launch = INFINITY, done = 0;
        uint64_t bytes = 0;
        for (; j < it->n && v[j].comm_id == v[i].comm_id && v[j].block == v[i].block; j++) {
            bytes += v[j].bytes;
            if (v[j].launch_us && v[j].launch_us < launch)
                launch = (double)v[j].launch_us;
            if ((double)v[j].complete_us > done)
                done = (double)v[j].complete_us;
        }
        if (isfinite(launch) && done >= launch) {
            double x0 = X(&s, launch), x1 = X(&s, done);
            fprintf(f,
                    "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"18\" fill=\"%s\" "
                    "stroke=\"#7f3f00\" stroke-width=\"0.4\"><title>block %u: %zu calls, %llu "
                    "bytes, %.0f us</title></rect>\n",
                    x0, yn - 18, fmax(x1 - x0, 0.8), shade ? "#ffbb78" : "#ff7f0e", v[i].block,
                    j - i, (unsigned long long)bytes, done - launch);
            if (x1 - x0 > 16)
                fprintf(f,
                        "<text x=\"%.2f\" y=\"%.1f\" text-anchor=\"middle\" "
                        "class=\"blk\">%zu</text>\n",
                        (x0 + x1) / 2, yn - 5, j - i);
            shade ^= 1;
        }
        i = j;
    }
    free(v);
    /* axis */
    double step = nice_step(span_us / 1000.0);
    fprintf(f,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000000\" "
            "stroke-width=\"1\"/>\n",
            LEFT, yax, W - RIGHT, yax);
    for (double t = 0; t <= span_us / 1000.0 + 1e-9; t += step) {
        double x = X(&s, s.t0 + t * 1000.0);
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000000\" "
                "stroke-width=\"1\"/>\n<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
                "class=\"tick\">%g</text>\n",
                x, yax, x, yax + 4, x, yax + 16, t);
    }
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" class=\"tick\">ms</text>\n",
            LEFT - 8, yax + 16);
    fputs("</g>\n", f);
    return 0;
}

static void legend(FILE *f, double y)
{
    fprintf(
        f,
        "<g class=\"legend\">\n"
        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#1f77b4\" "
        "stroke-width=\"2\"/><text x=\"%.1f\" y=\"%.1f\" class=\"lbl\">call arrival "
        "(height: bytes)</text>\n"
        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#2ca02c\" "
        "stroke-width=\"2\"/><text x=\"%.1f\" y=\"%.1f\" class=\"lbl\">gradient ready</text>\n"
        "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"10\" fill=\"#ff7f0e\"/><text "
        "x=\"%.1f\" y=\"%.1f\" class=\"lbl\">block on the network (number: members)</text>\n"
        "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"10\" fill=\"#d62728\" "
        "fill-opacity=\"0.25\"/><text x=\"%.1f\" y=\"%.1f\" class=\"lbl\">network idle while "
        "a gradient waited</text>\n"
        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#888888\" "
        "stroke-dasharray=\"3,3\"/><text x=\"%.1f\" y=\"%.1f\" class=\"lbl\">learned step</text>\n"
        "</g>\n",
        LEFT, y, LEFT, y - 10, LEFT + 6, y, LEFT + 200, y, LEFT + 200, y - 10, LEFT + 206, y,
        LEFT + 330, y - 10, LEFT + 350, y, LEFT + 620, y - 10, LEFT + 640, y, LEFT + 900, y,
        LEFT + 900, y - 10, LEFT + 906, y);
}

static const rep_iter_t *find(const rep_log_t *log, uint64_t iteration)
{
    for (size_t i = 0; i < log->n_iters; i++)
        if (log->iters[i].iteration == iteration)
            return &log->iters[i];
    return NULL;
}

/* 1 if every call of the iteration has its index (the learner knew the iteration length). */
static int indexed(const rep_iter_t *it)
{
    for (size_t i = 0; i < it->n; i++)
        if (it->calls[i].index == UINT32_MAX)
            return 0;
    return 1;
}

/* The most common length of the indexed iterations (the largest length when none is indexed). */
static size_t typical_length(const rep_log_t *log)
{
    size_t best = 0, best_count = 0, largest = 0;
    for (size_t i = 0; i < log->n_iters; i++) {
        size_t n = log->iters[i].n, count = 0;
        if (n > largest)
            largest = n;
        if (!indexed(&log->iters[i]))
            continue;
        for (size_t j = 0; j < log->n_iters; j++)
            count += log->iters[j].n == n && indexed(&log->iters[j]);
        if (count > best_count) {
            best = n;
            best_count = count;
        }
    }
    return best_count ? best : largest;
}

int rep_svg_write(const rep_log_t *log, long long iteration, const char *out_path, char *err,
                  size_t errlen)
{
    if (log->n_iters == 0) {
        snprintf(err, errlen, "%s: no iteration in the log to draw", log->path);
        return -1;
    }
    size_t full = typical_length(log);
    const rep_iter_t *early = &log->iters[0], *late = NULL;
    for (size_t i = 0; i < log->n_iters; i++)
        if (log->iters[i].n == full) {
            early = &log->iters[i];
            break;
        }
    for (size_t i = log->n_iters; i-- > 0 && !late;)
        if (log->iters[i].n == full)
            late = &log->iters[i];
    if (iteration >= 0) {
        late = find(log, (uint64_t)iteration);
        if (!late) {
            snprintf(err, errlen, "%s: iteration %lld is not in the log (it holds %llu..%llu)",
                     log->path, iteration, (unsigned long long)log->iters[0].iteration,
                     (unsigned long long)log->iters[log->n_iters - 1].iteration);
            return -1;
        }
    }
    int two = late != early;
    double span = fmax(iter_end(early) - iter_start(early), iter_end(late) - iter_start(late));
    if (!(span > 0))
        span = 1000;
    double h = TOP + PANEL_H * (two ? 2 : 1) + 40;
    FILE *f = fopen(out_path, "w");
    if (!f) {
        snprintf(err, errlen, "cannot write %s", out_path);
        return -1;
    }
    fprintf(f,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
            "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\">\n"
            "<style>.ttl{font-size:14px;font-weight:bold}.lbl{font-size:11px}"
            ".tick{font-size:10px}.blk{font-size:9px}</style>\n"
            "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"#ffffff\"/>\n"
            "<text x=\"%.1f\" y=\"22\" class=\"ttl\">",
            W, h, W, h, W, h, LEFT);
    char head[512];
    snprintf(head, sizeof(head), "prophet schedule, rank %d of %d on %s (gate %s)", log->rank,
             log->nranks, log->host, log->gate);
    xml_text(f, head);
    fputs("</text>\n", f);
    int rc = 0;
    if (two)
        rc = panel(f, log, early, span, TOP,
                   plan_for(log, early->iteration) ? "early" : "early (before the first plan)");
    if (!rc)
        rc = panel(f, log, late, span, TOP + (two ? PANEL_H : 0),
                   two ? "late" : "the only iteration logged");
    legend(f, TOP + PANEL_H * (two ? 2 : 1) + 20);
    fputs("</svg>\n", f);
    if (fclose(f) != 0 || rc) {
        snprintf(err, errlen, "cannot write %s", out_path);
        return -1;
    }
    return 0;
}
