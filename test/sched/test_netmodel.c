/* Network model: the fit recovers alpha and bandwidth from noisy samples with outliers; a
 * sustained bandwidth change fires `changed` within a bounded number of samples; stationary
 * noise never does; the probe raises the bandwidth as a lower bound; fixing pins values; a read
 * between the model's periodic fits answers the fit of every sample seen. */
#include <errno.h>
#include <math.h>

#include "check.h"
#include "prophet/sched.h"

/* One noisy sample: multiplicative noise +-noise, and with probability p_out a stall (x2..x5). */
static void feed(prophet_netmodel_t *m, uint64_t *rng, double alpha, double bw, double noise,
                 double p_out)
{
    uint64_t bytes = (uint64_t)exp(log(4096.0) + test_uniform(rng) * log(65536.0));
    uint32_t ops = 1 + (uint32_t)(test_uniform(rng) * 4);
    double d = ops * alpha + bytes * 1e6 / bw;

    d *= 1 + noise * (2 * test_uniform(rng) - 1);
    if (test_uniform(rng) < p_out)
        d *= 2 + 3 * test_uniform(rng);
    CHECK(prophet_netmodel_observe(m, bytes, ops, d) == 0);
}

int main(void)
{
    prophet_net_t init = {.alpha_us = 10, .bandwidth_Bps = 1e8, .source = PROPHET_NET_DEFAULT};
    prophet_net_t got;
    prophet_netmodel_t *m;
    uint64_t rng = 42;
    int i, trial, fired_at, max_delay = 0;

    /* 1. Fit from noisy samples with 5% stalls. */
    for (trial = 0; trial < 20; trial++) {
        double alpha = 20 + 10 * trial, bw = 1e9 * (1 + trial % 5);

        m = prophet_netmodel_new(&init);
        CHECK(m);
        for (i = 0; i < 200; i++)
            feed(m, &rng, alpha, bw, 0.05, 0.05);
        prophet_netmodel_get(m, &got);
        CHECK(got.source == PROPHET_NET_FITTED);
        CHECKF(fabs(got.bandwidth_Bps / bw - 1) < 0.05, "bw %g want %g", got.bandwidth_Bps, bw);
        CHECKF(fabs(got.alpha_us - alpha) < 0.15 * alpha + 5, "alpha %g want %g", got.alpha_us,
               alpha);
        prophet_netmodel_free(m);
    }

    /* 2. A step change of the bandwidth (-30% or +40%) fires within 25 samples, not before. */
    for (trial = 0; trial < 40; trial++) {
        double bw = 2.5e9, f = trial % 2 ? 0.7 : 1.4;

        m = prophet_netmodel_new(&init);
        for (i = 0; i < 300; i++) {
            feed(m, &rng, 50, bw, 0.08, 0.03);
            CHECKF(!prophet_netmodel_changed(m), "false alarm at sample %d (trial %d)", i, trial);
        }
        fired_at = -1;
        for (i = 0; i < 100; i++) {
            feed(m, &rng, 50, bw * f, 0.08, 0.03);
            if (prophet_netmodel_changed(m)) {
                fired_at = i;
                break;
            }
        }
        CHECKF(fired_at >= 0 && fired_at < 25, "trial %d: change seen after %d samples", trial,
               fired_at);
        if (fired_at > max_delay)
            max_delay = fired_at;
        CHECK(!prophet_netmodel_changed(m)); /* reading clears */
        for (i = 0; i < 60; i++)
            feed(m, &rng, 50, bw * f, 0.08, 0.03);
        prophet_netmodel_get(m, &got);
        CHECKF(fabs(got.bandwidth_Bps / (bw * f) - 1) < 0.08, "after change bw %g want %g",
               got.bandwidth_Bps, bw * f);
        prophet_netmodel_free(m);
    }

    /* 3. Long stationary noise (10%, 5% stalls): no alarm in 5000 samples. */
    m = prophet_netmodel_new(&init);
    for (i = 0; i < 5000; i++) {
        feed(m, &rng, 80, 1.25e9, 0.10, 0.05);
        CHECKF(!prophet_netmodel_changed(m), "false alarm at stationary sample %d", i);
    }

    /* 4. The probe is a lower bound: a higher recent probe rate wins; an old one is forgotten. */
    prophet_netmodel_get(m, &got);
    CHECK(prophet_netmodel_probe(m, got.bandwidth_Bps * 1.5, 1000000) == 0);
    prophet_netmodel_get(m, &got);
    CHECK(got.source == PROPHET_NET_EBPF && fabs(got.bandwidth_Bps / 1.875e9 - 1) < 0.06);
    CHECK(prophet_netmodel_probe(m, 1e6, 3000000) == 0); /* 2 s later, a quiet link */
    prophet_netmodel_get(m, &got);
    CHECK(got.source == PROPHET_NET_FITTED && fabs(got.bandwidth_Bps / 1.25e9 - 1) < 0.06);
    CHECK(prophet_netmodel_probe(m, -1, 0) == -EINVAL);
    CHECK(prophet_netmodel_observe(m, 100, 0, 5) == -EINVAL);
    CHECK(prophet_netmodel_observe(m, 100, 1, 0) == -EINVAL);

    /* 5. Pinned bandwidth stays; alpha is still fitted. */
    CHECK(prophet_netmodel_fix(m, -1, 5e9) == 0);
    for (i = 0; i < 100; i++)
        feed(m, &rng, 80, 1.25e9, 0.02, 0);
    prophet_netmodel_get(m, &got);
    CHECK(got.bandwidth_Bps == 5e9);
    prophet_netmodel_free(m);

    /* 6. Read between fits: once armed the model refits only every few samples, so a read must
     * fit what came since. Two models get the same 40 samples; one of them then 1..7 more from a
     * 2% slower link (inside the fit's outlier limit, too small for the change detector): its
     * read must differ from the other's. A read that answered the last periodic fit would
     * answer the 40 samples' fit, bit for bit. */
    for (int extra = 1; extra <= 7; extra++) {
        prophet_netmodel_t *base = prophet_netmodel_new(&init), *more = prophet_netmodel_new(&init);
        uint64_t r1 = 7, r2 = 7;
        prophet_net_t a, b;

        CHECK(base && more);
        for (i = 0; i < 40; i++) {
            feed(base, &r1, 50, 1e9, 0.01, 0);
            feed(more, &r2, 50, 1e9, 0.01, 0);
        }
        for (i = 0; i < extra; i++)
            feed(more, &r2, 50, 0.98e9, 0, 0);
        prophet_netmodel_get(base, &a);
        prophet_netmodel_get(more, &b);
        CHECKF(a.alpha_us != b.alpha_us || a.bandwidth_Bps != b.bandwidth_Bps,
               "%d samples after 40: the read answers the 40 samples' fit (alpha %.3f us, "
               "bandwidth %.0f B/s)",
               extra, b.alpha_us, b.bandwidth_Bps);
        prophet_netmodel_free(base);
        prophet_netmodel_free(more);
    }

    /* 7. Nothing measured yet: the initial guess, marked as such. */
    m = prophet_netmodel_new(NULL);
    prophet_netmodel_get(m, &got);
    CHECK(got.source == PROPHET_NET_DEFAULT && got.bandwidth_Bps > 0 && got.alpha_us >= 0);
    prophet_netmodel_free(m);
    printf("netmodel: ok (change detected within %d samples at worst)\n", max_delay + 1);
    return 0;
}
