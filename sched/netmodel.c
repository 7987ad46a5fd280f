/* Network model: all-reduce cost = n_ops * alpha + bytes / bandwidth, fitted online.
 *
 * Fit: weighted least squares over a sliding window of the last NET_WINDOW completed operations,
 * minimising relative residuals (durations span orders of magnitude, noise is multiplicative),
 * then refitted once without the samples whose relative residual lies more than 3 robust
 * standard deviations (1.4826 * MAD) from the median: a stalled operation does not drag the fit.
 * A window whose sizes are all alike cannot separate alpha from bandwidth; then alpha is kept and
 * only the bandwidth is fitted.
 *
 * Probe: the eBPF probe's throughput is what the link carried, so it is a lower bound on what it
 * can carry: the bandwidth used is max(fitted, highest probe sample of the last second).
 *
 * Change detector: each bandwidth-dominated sample gives an instant bandwidth; a two-sided CUSUM
 * on log(instant / reference) with drift log(1.2)/2 (half of a 20% move), each sample's
 * contribution clipped to +-0.25 (one outlier alone cannot fire it) and a threshold of
 * max(0.8, 6 sigma) fires after a sustained move of more than ~20%. Then the window keeps only
 * the newest samples, the fit restarts from them and the reference is re-armed. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sched_internal.h"

#define NET_WINDOW 64
#define NET_MIN_FIT 4
/* Samples between fits once the change detector is armed (earlier: every sample), and at every
 * read. The fit sorts the window twice (median, MAD) and solves two passes: ~6,000 instructions,
 * paid by the readiness poller on every completed operation when it ran per sample, while
 * the planner reads the model once per agreement. The detector needs only the fit's alpha and
 * spread, which move slowly over a 64-sample window. */
#define NET_REFIT_EVERY 8
#define NET_MIN_ARM 8
#define NET_KEEP_AFTER_CHANGE 6
#define PROBE_WINDOW 32
#define PROBE_HORIZON_US 1000000.0
#define CUSUM_DRIFT 0.0911 /* log(1.2) / 2 */
#define CUSUM_CLIP 0.25
#define CUSUM_MIN_H 0.8

typedef struct net_sample {
    double bytes, n_ops, dur_us;
} net_sample_t;

struct prophet_netmodel {
    prophet_net_t initial;
    double alpha_us, bw_fit_Bps; /* fitted (or initial) values */
    int fitted, fixed_alpha, fixed_bw;
    net_sample_t s[NET_WINDOW];
    uint32_t head, n;  /* ring: n newest samples end at head */
    double sigma;      /* robust spread of relative residuals of the last fit */
    uint32_t unfitted; /* samples since the last fit */
    /* probe */
    double probe_bps[PROBE_WINDOW];
    int64_t probe_t[PROBE_WINDOW];
    uint32_t probe_head, probe_n;
    /* change detector */
    int armed;
    double ref_Bps, cusum_up, cusum_down;
    int changed;
};

static const net_sample_t *sample_at(const prophet_netmodel_t *m, uint32_t i) /* 0 = oldest */
{
    return &m->s[(m->head + NET_WINDOW - m->n + i) % NET_WINDOW];
}

prophet_netmodel_t *prophet_netmodel_new(const prophet_net_t *initial)
{
    prophet_netmodel_t *m = calloc(1, sizeof(*m));

    if (!m)
        return NULL;
    if (initial && initial->bandwidth_Bps > 0 && initial->alpha_us >= 0) {
        m->initial = *initial;
    } else {
        m->initial.alpha_us = 50;          /* a guess until something is measured */
        m->initial.bandwidth_Bps = 1.25e9; /* 10 Gbit/s */
        m->initial.source = PROPHET_NET_DEFAULT;
    }
    m->alpha_us = m->initial.alpha_us;
    m->bw_fit_Bps = m->initial.bandwidth_Bps;
    if (m->initial.source == PROPHET_NET_FIXED)
        m->fixed_alpha = m->fixed_bw = 1;
    return m;
}

void prophet_netmodel_free(prophet_netmodel_t *m)
{
    free(m);
}

int prophet_netmodel_fix(prophet_netmodel_t *m, double alpha_us, double bandwidth_Bps)
{
    if (!m)
        return -EINVAL;
    m->fixed_alpha = alpha_us >= 0;
    if (m->fixed_alpha)
        m->alpha_us = alpha_us;
    m->fixed_bw = bandwidth_Bps > 0;
    if (m->fixed_bw)
        m->bw_fit_Bps = bandwidth_Bps;
    return 0;
}

/* One weighted least-squares pass (weights 1/dur^2) over the samples with keep[i] set.
 * Unknowns: alpha (us per op) and c (us per byte). Returns 0 when a usable fit came out. */
static int fit_pass(const prophet_netmodel_t *m, const uint8_t *keep, double *alpha, double *c)
{
    double s11 = 0, s12 = 0, s22 = 0, s1y = 0, s2y = 0, det;
    uint32_t i, used = 0;

    for (i = 0; i < m->n; i++) {
        const net_sample_t *x = sample_at(m, i);
        double w;

        if (!keep[i])
            continue;
        w = 1.0 / (x->dur_us * x->dur_us);
        s11 += w * x->n_ops * x->n_ops;
        s12 += w * x->n_ops * x->bytes;
        s22 += w * x->bytes * x->bytes;
        s1y += w * x->n_ops * x->dur_us;
        s2y += w * x->bytes * x->dur_us;
        used++;
    }
    if (used < 2)
        return -1;
    if (m->fixed_alpha || m->fixed_bw) {
        if (m->fixed_bw) {
            *c = 1e6 / m->bw_fit_Bps;
            *alpha = m->fixed_alpha ? m->alpha_us : (s1y - *c * s12) / s11;
        } else {
            *alpha = m->alpha_us;
            *c = (s2y - *alpha * s12) / s22;
        }
    } else {
        det = s11 * s22 - s12 * s12;
        if (det <= 1e-9 * s11 * s22) { /* sizes too alike to separate alpha from bandwidth */
            *alpha = m->alpha_us;
            *c = (s2y - *alpha * s12) / s22;
        } else {
            *alpha = (s1y * s22 - s2y * s12) / det;
            *c = (s11 * s2y - s12 * s1y) / det;
            if (*alpha < 0) {
                *alpha = 0;
                *c = s2y / s22;
            }
        }
    }
    if (*alpha < 0)
        *alpha = 0;
    return *c > 0 ? 0 : -1;
}

static void refit(prophet_netmodel_t *m)
{
    uint8_t keep[NET_WINDOW];
    double r[NET_WINDOW], tmp[NET_WINDOW];
    double alpha, c, med, mad, lim;
    uint32_t i;

    m->unfitted = 0;
    if (m->n < NET_MIN_FIT || (m->fixed_alpha && m->fixed_bw))
        return;
    memset(keep, 1, sizeof(keep));
    if (fit_pass(m, keep, &alpha, &c))
        return;
    for (i = 0; i < m->n; i++) {
        const net_sample_t *x = sample_at(m, i);

        r[i] = (x->dur_us - (alpha * x->n_ops + c * x->bytes)) / x->dur_us;
        tmp[i] = r[i];
    }
    med = prophet_median(tmp, m->n);
    memcpy(tmp, r, sizeof(double) * m->n);
    mad = 1.4826 * prophet_mad(tmp, m->n, med);
    lim = 3 * (mad > 0.01 ? mad : 0.01);
    for (i = 0; i < m->n; i++)
        keep[i] = fabs(r[i] - med) <= lim;
    if (fit_pass(m, keep, &alpha, &c) == 0) {
        m->alpha_us = alpha;
        m->bw_fit_Bps = 1e6 / c;
        m->fitted = 1;
        m->sigma = mad;
    }
}

/* Feeds one sample to the CUSUM; returns 1 when it fires. */
static int detect(prophet_netmodel_t *m, const net_sample_t *x)
{
    double wire = x->dur_us - x->n_ops * m->alpha_us, z, h;

    if (!m->armed || wire < 0.25 * x->dur_us)
        return 0; /* latency-dominated samples say little about bandwidth */
    z = log(x->bytes * 1e6 / wire / m->ref_Bps);
    if (z > CUSUM_CLIP)
        z = CUSUM_CLIP;
    if (z < -CUSUM_CLIP)
        z = -CUSUM_CLIP;
    m->cusum_up = fmax(0, m->cusum_up + z - CUSUM_DRIFT);
    m->cusum_down = fmax(0, m->cusum_down - z - CUSUM_DRIFT);
    h = fmax(CUSUM_MIN_H, 6 * m->sigma);
    return m->cusum_up > h || m->cusum_down > h;
}

static void arm(prophet_netmodel_t *m)
{
    m->armed = 1;
    m->ref_Bps = m->bw_fit_Bps;
    m->cusum_up = m->cusum_down = 0;
}

int prophet_netmodel_observe(prophet_netmodel_t *m, uint64_t bytes, uint32_t n_ops, double dur_us)
{
    net_sample_t x;

    if (!m || n_ops == 0 || !(dur_us > 0) || !isfinite(dur_us))
        return -EINVAL;
    x.bytes = (double)bytes;
    x.n_ops = n_ops;
    x.dur_us = dur_us;
    if (detect(m, &x)) {
        m->changed = 1;
        if (m->n > NET_KEEP_AFTER_CHANGE - 1)
            m->n = NET_KEEP_AFTER_CHANGE - 1; /* keep only the newest: the new regime */
        m->armed = 0;
    }
    m->s[m->head] = x;
    m->head = (m->head + 1) % NET_WINDOW;
    if (m->n < NET_WINDOW)
        m->n++;
    if (++m->unfitted >= NET_REFIT_EVERY || !m->armed)
        refit(m);
    if (!m->armed && m->fitted && m->n >= (m->changed ? NET_KEEP_AFTER_CHANGE : NET_MIN_ARM))
        arm(m);
    return 0;
}

int prophet_netmodel_probe(prophet_netmodel_t *m, double bps, int64_t t_us)
{
    if (!m || !(bps >= 0) || !isfinite(bps))
        return -EINVAL;
    m->probe_bps[m->probe_head] = bps;
    m->probe_t[m->probe_head] = t_us;
    m->probe_head = (m->probe_head + 1) % PROBE_WINDOW;
    if (m->probe_n < PROBE_WINDOW)
        m->probe_n++;
    return 0;
}

static double probe_bound(const prophet_netmodel_t *m)
{
    int64_t newest = 0;
    double best = 0;
    uint32_t i;

    for (i = 0; i < m->probe_n; i++) {
        uint32_t k = (m->probe_head + PROBE_WINDOW - 1 - i) % PROBE_WINDOW;

        if (i == 0)
            newest = m->probe_t[k];
        if ((double)(newest - m->probe_t[k]) > PROBE_HORIZON_US)
            break;
        if (m->probe_bps[k] > best)
            best = m->probe_bps[k];
    }
    return best;
}

void prophet_netmodel_get(prophet_netmodel_t *m, prophet_net_t *out)
{
    double lb;

    if (!m || !out)
        return;
    if (m->unfitted)
        refit(m); /* what observe() left for later */
    out->alpha_us = m->alpha_us;
    out->bandwidth_Bps = m->bw_fit_Bps;
    if (m->fixed_alpha && m->fixed_bw) {
        out->source = PROPHET_NET_FIXED;
        return;
    }
    out->source = m->fitted ? PROPHET_NET_FITTED : m->initial.source;
    lb = m->fixed_bw ? 0 : probe_bound(m);
    if (lb > out->bandwidth_Bps) {
        out->bandwidth_Bps = lb;
        out->source = PROPHET_NET_EBPF;
    }
}

int prophet_netmodel_changed(prophet_netmodel_t *m)
{
    int c;

    if (!m)
        return 0;
    c = m->changed;
    m->changed = 0;
    return c;
}
