/* Planners: the optimum DP equals brute force over every partition on small n and the
 * hand-computed iteration of 2-call cases; every planner returns a partition into consecutive
 * runs; no other policy's simulated time beats the DP's (n up to 2000); buckets, fusion and
 * Prophet's rule cut where their definitions say; bad arguments are refused. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "check.h"
#include "prophet/sched.h"

static prophet_profile_t prof;
static prophet_plan_t plan, bf;

static void random_profile(uint64_t *rng, uint32_t n)
{
    double t = 0;

    memset(&prof, 0, sizeof(prof));
    prof.n_calls = n;
    for (uint32_t i = 0; i < n; i++) {
        prof.sig[i].bytes = 1 + (uint64_t)exp(test_uniform(rng) * log(5e7));
        prof.sig[i].count = prof.sig[i].bytes / 4;
        /* stepwise arrivals: mostly small gaps, sometimes a long one */
        t += test_uniform(rng) < 0.25 ? 2000 * test_uniform(rng) : 20 * test_uniform(rng);
        prof.ready_us[i] = t;
        prof.priority[i] = n - 1 - i;
    }
    prof.forward_us = 0; /* iteration = max(last ready, end of last block) */
    prof.backward_us = 0;
}

static double sim(const prophet_plan_t *p, const prophet_net_t *net)
{
    prophet_sim_opts_t so = {.ranks = 8, .wait_per_layer = 0};
    prophet_sim_result_t r;

    CHECK(prophet_sim_run(&so, &prof, net, p, &r) == 0);
    return r.iteration_us;
}

static void check_partition(const prophet_plan_t *p)
{
    CHECK(p->n_calls == prof.n_calls && p->n_blocks >= 1 && p->n_blocks <= p->n_calls);
    CHECK(p->block_first[0] == 0);
    for (uint32_t b = 1; b < p->n_blocks; b++)
        CHECK(p->block_first[b] > p->block_first[b - 1] && p->block_first[b] < p->n_calls);
}

/* Brute force: every subset of the n-1 cut points. */
static double brute_force(const prophet_net_t *net)
{
    uint32_t n = prof.n_calls, mask;
    double best = INFINITY;

    memset(&bf, 0, sizeof(bf));
    bf.n_calls = n;
    for (mask = 0; mask < (1u << (n - 1)); mask++) {
        bf.n_blocks = 0;
        bf.block_first[bf.n_blocks++] = 0;
        for (uint32_t i = 1; i < n; i++)
            if (mask & (1u << (i - 1)))
                bf.block_first[bf.n_blocks++] = i;
        double t = sim(&bf, net);

        if (t < best)
            best = t;
    }
    return best;
}

int main(void)
{
    prophet_planner_opts_t o = {.ranks = 8};
    prophet_net_t net = {.alpha_us = 100, .bandwidth_Bps = 1e9, .source = PROPHET_NET_FIXED};
    uint64_t rng = 7;
    int trial, p;

    /* 1. The DP is exact: equal to brute force on 400 random small profiles. */
    for (trial = 0; trial < 400; trial++) {
        uint32_t n = 1 + trial % 13;
        double want, got;

        random_profile(&rng, n);
        net.alpha_us = 500 * test_uniform(&rng);
        net.bandwidth_Bps = 1e8 * exp(test_uniform(&rng) * log(1000.0));
        o.policy = PROPHET_POLICY_OPTIMAL;
        CHECK(prophet_plan_make(&o, &prof, &net, &plan) == 0);
        check_partition(&plan);
        want = brute_force(&net);
        got = sim(&plan, &net);
        CHECKF(fabs(got - want) <= 1e-9 * want + 1e-6, "trial %d n=%u: DP %.6f brute %.6f", trial,
               n, got, want);
        CHECK(fabs(plan.predicted_iteration_us - got) < 1e-6);
    }

    /* 2. Every planner gives a partition, and none beats the optimum (n up to 2000). */
    for (trial = 0; trial < 60; trial++) {
        uint32_t n = 1 + (uint32_t)(test_uniform(&rng) * (trial < 50 ? 300 : 2000));
        double opt;

        random_profile(&rng, n);
        net.alpha_us = 300 * test_uniform(&rng);
        net.bandwidth_Bps = 1e8 * exp(test_uniform(&rng) * log(1000.0));
        o.policy = PROPHET_POLICY_OPTIMAL;
        CHECK(prophet_plan_make(&o, &prof, &net, &plan) == 0);
        opt = sim(&plan, &net);
        for (p = 0; p < PROPHET_POLICY_COUNT; p++) {
            o.policy = (prophet_policy_t)p;
            CHECK(prophet_plan_make(&o, &prof, &net, &plan) == 0);
            check_partition(&plan);
            CHECK(plan.policy == (prophet_policy_t)p);
            CHECK(plan.sig_hash == prophet_sig_hash(prof.sig, n));
            CHECKF(sim(&plan, &net) >= opt * (1 - 1e-12), "policy %d beats the optimum", p);
        }
    }

    /* 2b. The DP on hand-computed cases: 2 calls of 1 MB, alpha 100 us, 1 GB/s; the cost model
     *     (sched/planner_optimal.c, sched/sim.c) gives a block of b bytes 100 + b / 1000 us: 1100
     *     us for one call, 2100 for both. Call 1 ready at 0, 50, 1000 or 5000 us. One block ends
     *     at ready1 + 2100; two end at max(1100, ready1) + 1100. */
    {
        const double ready1[4] = {0, 50, 1000, 5000};
        const double want_us[4] = {2100, 2150, 2200, 6100};
        const uint32_t want_blocks[4] = {1, 1, 2, 2};

        net = (prophet_net_t){.alpha_us = 100, .bandwidth_Bps = 1e9, .source = PROPHET_NET_FIXED};
        memset(&prof, 0, sizeof(prof));
        prof.n_calls = 2;
        prof.sig[0].bytes = prof.sig[1].bytes = 1000000;
        o.policy = PROPHET_POLICY_OPTIMAL;
        for (int k = 0; k < 4; k++) {
            prof.ready_us[1] = ready1[k];
            CHECK(prophet_plan_make(&o, &prof, &net, &plan) == 0);
            CHECKF(plan.n_blocks == want_blocks[k] &&
                       fabs(plan.predicted_iteration_us - want_us[k]) < 1e-6 &&
                       fabs(sim(&plan, &net) - want_us[k]) < 1e-6,
                   "ready1=%g: %u blocks, %.3f us; want %u, %.0f", ready1[k], plan.n_blocks,
                   plan.predicted_iteration_us, want_blocks[k], want_us[k]);
        }
    }

    /* 3. Passthrough: one block per call. */
    random_profile(&rng, 50);
    o.policy = PROPHET_POLICY_PASSTHROUGH;
    CHECK(prophet_plan_make(&o, &prof, &net, &plan) == 0 && plan.n_blocks == 50);

    /* 4. Buckets: 10 x 600 KiB with 2 MiB buckets -> [0,1] (>= 1 MiB), then groups of 4. */
    memset(&prof, 0, sizeof(prof));
    prof.n_calls = 10;
    for (int i = 0; i < 10; i++) {
        prof.sig[i].bytes = 600 * 1024;
        prof.ready_us[i] = 100.0 * i;
    }
    o.policy = PROPHET_POLICY_BUCKETS;
    o.bucket_bytes = 2 << 20;
    CHECK(prophet_plan_make(&o, &prof, &net, &plan) == 0);
    CHECK(plan.n_blocks == 3 && plan.block_first[1] == 2 && plan.block_first[2] == 6);

    /* 5. Fusion: cycle 1000 us; ready at 100, 900, 1500, 2100, 5000, 5001 -> fires at 1000
     *    {0,1}, 2000 {2}, 3000 {3}, 5000 {4}, 6000 {5}; a 1-byte cap splits every call. */
    prof.n_calls = 6;
    {
        const double r[6] = {100, 900, 1500, 2100, 5000, 5001};

        for (int i = 0; i < 6; i++) {
            prof.ready_us[i] = r[i];
            prof.sig[i].bytes = 1000;
        }
    }
    o.policy = PROPHET_POLICY_FUSION;
    o.cycle_us = 1000;
    o.fusion_bytes = 1 << 20;
    CHECK(prophet_plan_make(&o, &prof, &net, &plan) == 0);
    CHECK(plan.n_blocks == 5 && plan.block_first[1] == 2 && plan.block_first[2] == 3 &&
          plan.block_first[3] == 4 && plan.block_first[4] == 5);
    o.fusion_bytes = 1;
    CHECK(prophet_plan_make(&o, &prof, &net, &plan) == 0 && plan.n_blocks == 6);
    /*    Readiness far from the origin, where a 1000 us cycle is below a double's resolution (a
     *    report of a corrupt log) and cycles too many to count in 64 bits: the timer still
     *    advances, {0} {1,2} {3}; a NaN offset is ready at the first firing. */
    prof.n_calls = 4;
    {
        const double r[4] = {100, 1e22, 1e22, 1e40};

        for (int i = 0; i < 4; i++)
            prof.ready_us[i] = r[i];
    }
    o.fusion_bytes = 1 << 20;
    CHECK(prophet_plan_make(&o, &prof, &net, &plan) == 0);
    CHECKF(plan.n_blocks == 3 && plan.block_first[1] == 1 && plan.block_first[2] == 3,
           "far readiness: %u blocks", plan.n_blocks);
    prof.n_calls = 3;
    prof.ready_us[0] = 100;
    prof.ready_us[1] = NAN;
    prof.ready_us[2] = 200;
    CHECK(prophet_plan_make(&o, &prof, &net, &plan) == 0 && plan.n_blocks == 1);

    /* 6. Prophet: three steps {0..3} {4..7} {8..9}; the first gap moves 2 calls' worth, so the
     *    first step is cut after 2 calls and the rest carried; the last step is one block. */
    prof.n_calls = 10;
    for (int i = 0; i < 10; i++) {
        prof.sig[i].bytes = 1000000;
        prof.ready_us[i] = (i < 4 ? 0 : i < 8 ? 10000 : 20000) + i;
    }
    net.alpha_us = 100;
    net.bandwidth_Bps = 2.0e8; /* 1 MB = 5000 us: a 10000 us gap holds 1.98 MB -> 1 call */
    o.policy = PROPHET_POLICY_PROPHET;
    o.credit_bytes = 0;
    CHECK(prophet_plan_make(&o, &prof, &net, &plan) == 0);
    CHECKF(plan.n_blocks == 3 && plan.block_first[1] == 1 && plan.block_first[2] == 2,
           "prophet blocks %u [%u %u]", plan.n_blocks, plan.block_first[1], plan.block_first[2]);
    net.bandwidth_Bps = 1e12; /* everything fits in each gap: one block per step */
    CHECK(prophet_plan_make(&o, &prof, &net, &plan) == 0);
    CHECK(plan.n_blocks == 3 && plan.block_first[1] == 4 && plan.block_first[2] == 8);
    o.credit_bytes = 1500000; /* credit window: the last step in 1-call blocks */
    CHECK(prophet_plan_make(&o, &prof, &net, &plan) == 0);
    CHECK(plan.n_blocks == 4 && plan.block_first[3] == 9);

    /* 7. Bad arguments. */
    CHECK(prophet_plan_make(NULL, &prof, &net, &plan) == -EINVAL);
    net.bandwidth_Bps = 0;
    CHECK(prophet_plan_make(&o, &prof, &net, &plan) == -EINVAL);
    net.bandwidth_Bps = 1e9;
    o.policy = PROPHET_POLICY_COUNT;
    CHECK(prophet_plan_make(&o, &prof, &net, &plan) == -EINVAL);
    o.policy = PROPHET_POLICY_OPTIMAL;
    prof.n_calls = 0;
    CHECK(prophet_plan_make(&o, &prof, &net, &plan) == -EINVAL);
    printf("planners: ok\n");
    return 0;
}
