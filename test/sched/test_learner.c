/* Profile learner: period and phase from signatures only (same boundaries whatever the timing),
 * DDP's different first iteration, sub-periods of identical layers, a changed sequence
 * (relearn), deferred readiness, robust offsets under noise. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "check.h"
#include "prophet/sched.h"

typedef struct stream {
    prophet_call_sig_t sig[512];
    double off[512]; /* true readiness offset of each call in its iteration */
    uint32_t n;
} stream_t;

static void add(stream_t *s, uint64_t bytes, double off)
{
    prophet_call_sig_t *g = &s->sig[s->n];

    memset(g, 0, sizeof(*g));
    g->comm_id = 0;
    g->count = bytes / 4;
    g->dtype = 7;
    g->bytes = bytes;
    s->off[s->n++] = off;
}

/* n distinct tensors, stepwise readiness: steps of 4 calls, 800 us apart. */
static void make_distinct(stream_t *s, uint32_t n, uint64_t base)
{
    s->n = 0;
    for (uint32_t i = 0; i < n; i++)
        add(s, base + 4 * (i + 1) * 1000, (i / 4) * 800.0 + (i % 4) * 3.0);
}

typedef struct run {
    prophet_learner_t *l;
    int64_t clock;
    uint64_t rng;
    uint32_t ready_flags, relearn_flags, starts;
    double noise;
} run_t;

/* Feeds one iteration of `s`; checks indices once locked. Returns the flags seen. */
static int feed_iter(run_t *r, const stream_t *s, int check_index)
{
    int all = 0;

    for (uint32_t i = 0; i < s->n; i++) {
        uint32_t idx;
        double jitter = r->noise * (2 * test_uniform(&r->rng) - 1);
        int f = prophet_learner_observe(r->l, &s->sig[i], r->clock + (int64_t)(s->off[i] + jitter),
                                        &idx);

        CHECK(f >= 0);
        all |= f;
        if (check_index)
            CHECKF(idx == i, "call %u got index %u", i, idx);
        if (f & PROPHET_LEARN_ITER_START)
            CHECK(idx == 0);
    }
    r->clock += 100000;
    return all;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* Offsets must match the truth up to one common shift (the first call's own noise moves them
 * all alike, which no plan can notice): residuals around the median error within tol. */
static void check_profile(const prophet_learner_t *l, const stream_t *s, double tol)
{
    const prophet_profile_t *p = prophet_learner_profile(l);
    double e[512], sorted[512], shift;

    CHECK(p);
    CHECKF(p->n_calls == s->n, "profile has %u calls, want %u", p->n_calls, s->n);
    CHECK(p->ready_us[0] == 0);
    for (uint32_t i = 0; i < s->n; i++) {
        CHECK(p->sig[i].bytes == s->sig[i].bytes);
        CHECK(p->priority[i] == s->n - 1 - i);
        e[i] = sorted[i] = p->ready_us[i] - (s->off[i] - s->off[0]);
    }
    qsort(sorted, s->n, sizeof(double), cmp_d);
    shift = sorted[s->n / 2];
    CHECKF(fabs(shift) <= tol, "common shift %.1f", shift);
    for (uint32_t i = 0; i < s->n; i++)
        CHECKF(fabs(e[i] - shift) <= tol, "call %u: %.1f want %.1f (+%.1f)", i, p->ready_us[i],
               s->off[i] - s->off[0], shift);
    CHECK(fabs(p->iteration_us - 100000) < 5 * tol + 1);
    CHECK(p->n_steps >= 1);
}

int main(void)
{
    prophet_learner_opts_t o = {.learn_iters = 4, .max_calls = PROPHET_MAX_CALLS};
    static stream_t a, b, x, bert;
    run_t r;
    int f, it;

    CHECK(prophet_learner_new(NULL) == NULL);
    {
        prophet_learner_opts_t bad = {.learn_iters = 1, .max_calls = 10};

        CHECK(prophet_learner_new(&bad) == NULL);
    }

    /* 1. Clean stream of 30 distinct calls: locks after 3 copies, indices from then on, ready
     *    after learn_iters completed iterations, offsets within the noise. */
    make_distinct(&a, 30, 0);
    memset(&r, 0, sizeof(r));
    r.clock = 1000000; /* negative ready times mean "unknown" */
    r.l = prophet_learner_new(&o);
    r.rng = 5;
    r.noise = 20;
    for (it = 0; it < 3; it++)
        feed_iter(&r, &a, 0);
    CHECK(prophet_learner_profile(r.l) == NULL);
    for (it = 0; it < 8; it++) {
        f = feed_iter(&r, &a, 1);
        CHECK(f & PROPHET_LEARN_ITER_START);
        CHECK(!(f & PROPHET_LEARN_RELEARN));
    }
    check_profile(r.l, &a, 25);

    /* 2. The sequence changes (another model): RELEARN on the first mismatch, profile dropped,
     *    then the new one is learnt. */
    make_distinct(&b, 20, 7);
    f = feed_iter(&r, &b, 0);
    CHECK(f & PROPHET_LEARN_RELEARN);
    CHECK(prophet_learner_profile(r.l) == NULL);
    for (it = 0; it < 10; it++)
        feed_iter(&r, &b, it >= 3);
    check_profile(r.l, &b, 25);
    prophet_learner_free(r.l);

    /* 3. DDP: the first iteration has other buckets (same total bytes) whose last bucket equals
     *    the later iterations' last bucket; the boundary must still be the real one. */
    a.n = 0;
    add(&a, 1 << 20, 0);
    add(&a, 25 << 20, 3000);
    add(&a, 20 << 20, 6000);
    add(&a, 24 << 20, 9000);
    add(&a, 9 << 20, 12000); /* 79 MiB */
    x.n = 0;
    add(&x, 30 << 20, 5000);
    add(&x, 26 << 20, 8000);
    add(&x, 14 << 20, 11000);
    add(&x, 9 << 20, 12000); /* same tail bucket, 79 MiB */
    memset(&r, 0, sizeof(r));
    r.clock = 1000000; /* negative ready times mean "unknown" */
    r.l = prophet_learner_new(&o);
    r.rng = 9;
    r.noise = 10;
    feed_iter(&r, &x, 0);
    for (it = 0; it < 3; it++)
        feed_iter(&r, &a, 0);
    for (it = 0; it < 6; it++)
        CHECK(feed_iter(&r, &a, 1) & PROPHET_LEARN_ITER_START);
    check_profile(r.l, &a, 15);
    prophet_learner_free(r.l);

    /* 4. Identical layers (BERT-like): 3 head calls, 8 x the same 4-call layer, 2 embedding
     *    calls. Sub-periods lock and break, then the whole iteration is found. */
    bert.n = 0;
    add(&bert, 3072, 0);
    add(&bert, 3072 * 768, 10);
    add(&bert, 768 * 4, 20);
    for (int k = 0; k < 8; k++) {
        add(&bert, 768 * 768 * 4, 500.0 + 700 * k);
        add(&bert, 768 * 4, 510.0 + 700 * k);
        add(&bert, 3072 * 768 * 4, 800.0 + 700 * k);
        add(&bert, 3072 * 4, 805.0 + 700 * k);
    }
    add(&bert, 30522 * 768 * 4, 6500);
    add(&bert, 512 * 768 * 4, 6510);
    memset(&r, 0, sizeof(r));
    r.clock = 1000000; /* negative ready times mean "unknown" */
    r.l = prophet_learner_new(&o);
    r.rng = 11;
    r.noise = 5;
    for (it = 0; it < 6; it++)
        feed_iter(&r, &bert, 0);
    for (it = 0; it < 6; it++)
        CHECK(!(feed_iter(&r, &bert, 1) & PROPHET_LEARN_RELEARN));
    check_profile(r.l, &bert, 10);

    /* 5. Deferred readiness: observe with -1, set_ready afterwards (one iteration late). */
    {
        uint64_t iters[64];
        uint32_t n_it = 0;

        for (it = 0; it < 8; it++) {
            uint64_t its = 0;

            for (uint32_t i = 0; i < bert.n; i++) {
                uint32_t idx;

                CHECK(prophet_learner_observe(r.l, &bert.sig[i], -1, &idx) >= 0 && idx == i);
                its = prophet_learner_iteration(r.l);
            }
            iters[n_it++] = its;
            for (uint32_t i = 0; i < bert.n; i++) /* 7 us late everywhere: offsets unchanged */
                CHECK(prophet_learner_set_ready(r.l, its, i, r.clock + (int64_t)bert.off[i] + 7) ==
                      0);
            r.clock += 100000;
        }
        CHECK(iters[1] == iters[0] + 1);
        CHECK(prophet_learner_set_ready(r.l, iters[0] + 1000, 0, 5) == -ENOENT);
        CHECK(prophet_learner_set_ready(r.l, iters[0], 9999, 5) == -ENOENT);
        check_profile(r.l, &bert, 10);
    }
    prophet_learner_free(r.l);

    /* 6. Heavy noise with a late first call in some iterations: medians after re-alignment. */
    make_distinct(&a, 40, 0);
    memset(&r, 0, sizeof(r));
    r.clock = 1000000;
    o.learn_iters = 8;
    r.l = prophet_learner_new(&o);
    r.rng = 13;
    r.noise = 30;
    for (it = 0; it < 14; it++) {
        stream_t s = a;

        if (it % 4 == 1)
            s.off[0] += 400; /* the first call arrives late: its gate was closed */
        feed_iter(&r, &s, it >= 3);
    }
    check_profile(r.l, &a, 30);
    {
        const prophet_profile_t *p = prophet_learner_profile(r.l);

        CHECK(p->spread_us[5] > 0 && p->spread_us[5] < 40);
        CHECKF(p->iterations_seen >= 8, "seen %u", p->iterations_seen);
    }
    prophet_learner_free(r.l);

    /* 7. Boundaries and flags depend on signatures only: two learners, same calls, wildly
     *    different (or missing) timing, identical indices and flags, READY included. */
    {
        prophet_learner_t *l1, *l2;
        uint64_t rng = 17;

        o.learn_iters = 3;
        l1 = prophet_learner_new(&o);
        l2 = prophet_learner_new(&o);
        for (it = 0; it < 12; it++) {
            const stream_t *s = it < 2 ? &x : it < 7 ? &bert : &b;

            for (uint32_t i = 0; i < s->n; i++) {
                uint32_t i1, i2;
                int f1 = prophet_learner_observe(l1, &s->sig[i],
                                                 (int64_t)(test_rand(&rng) % 1000000), &i1);
                int f2 = prophet_learner_observe(l2, &s->sig[i], i % 2 ? -1 : 5, &i2);
                CHECK(f1 >= 0 && f2 >= 0 && f1 == f2 && i1 == i2);
            }
        }
        CHECK(prophet_learner_iteration(l1) == prophet_learner_iteration(l2));
        prophet_learner_free(l1);
        prophet_learner_free(l2);
    }
    printf("learner: ok\n");
    return 0;
}
