/* Step detection: both rules recover noisy stepwise profiles; one huge gap hides steps from
 * Prophet's mean rule but not from the robust rule; no steps are invented in smooth profiles. */
#include <math.h>
#include <string.h>
#include <errno.h>

#include "check.h"
#include "prophet/sched.h"

/* Builds n_steps steps of 3..12 gradients; gaps inside a step 1..9 us, between steps
 * big_lo..big_hi us; `huge` (if > 0) replaces the gap after step 1. Returns n, fills truth. */
static uint32_t make_profile(uint64_t *rng, uint32_t n_steps, double big_lo, double big_hi,
                             double huge, double *ready, uint32_t *last_of_step)
{
    uint32_t n = 0, s, k;
    double t = 100;

    for (s = 0; s < n_steps; s++) {
        uint32_t len = 3 + (uint32_t)(test_uniform(rng) * 10);

        for (k = 0; k < len; k++) {
            ready[n++] = t;
            t += 1 + 8 * test_uniform(rng);
        }
        last_of_step[s] = n - 1;
        t += (s == 1 && huge > 0) ? huge : big_lo + (big_hi - big_lo) * test_uniform(rng);
    }
    return n;
}

static int matches(const prophet_step_t *st, uint32_t ns, const uint32_t *truth, uint32_t nt)
{
    if (ns != nt)
        return 0;
    for (uint32_t i = 0; i < ns; i++)
        if (st[i].last != truth[i] || st[i].first != (i ? truth[i - 1] + 1 : 0))
            return 0;
    return 1;
}

int main(void)
{
    static double ready[PROPHET_MAX_CALLS];
    static prophet_step_t st[PROPHET_MAX_CALLS];
    uint32_t truth[64], ns, n, trial, mean_missed = 0;
    uint64_t rng = 0x1234567;

    /* 1. Clean stepwise profiles: both rules find the true steps. */
    for (trial = 0; trial < 200; trial++) {
        uint32_t steps = 2 + trial % 9;

        n = make_profile(&rng, steps, 600, 2000, 0, ready, truth);
        CHECK(prophet_steps_detect_robust(ready, n, 2.0, st, &ns) == 0);
        CHECKF(matches(st, ns, truth, steps), "robust trial %u: %u steps, want %u", trial, ns,
               steps);
        CHECK(prophet_steps_detect(ready, n, 2.0, st, &ns) == 0);
        CHECKF(matches(st, ns, truth, steps), "mean trial %u: %u steps, want %u", trial, ns, steps);
        /* step fields: ready of the step's last gradient, gap to the next step's ready */
        for (uint32_t i = 0; i + 1 < ns; i++) {
            CHECK(st[i].ready_us == ready[st[i].last]);
            CHECK(fabs(st[i].gap_after_us - (ready[st[i + 1].last] - ready[st[i].last])) < 1e-9);
        }
        CHECK(st[ns - 1].gap_after_us == 0);
    }

    /* 2. One huge gap (a slow layer, 60 ms): the mean rule loses steps, the robust rule not. */
    for (trial = 0; trial < 100; trial++) {
        uint32_t steps = 6 + trial % 5;

        n = make_profile(&rng, steps, 300, 900, 60000, ready, truth);
        CHECK(prophet_steps_detect_robust(ready, n, 2.0, st, &ns) == 0);
        CHECKF(matches(st, ns, truth, steps), "robust huge-gap trial %u: %u steps, want %u", trial,
               ns, steps);
        CHECK(prophet_steps_detect(ready, n, 2.0, st, &ns) == 0);
        mean_missed += !matches(st, ns, truth, steps);
    }
    CHECKF(mean_missed > 90, "the mean rule was expected to fail here (missed %u/100)",
           mean_missed);

    /* 3. A smooth profile (equal gaps with 20% noise) is one step for the robust rule. */
    for (n = 0; n < 200; n++)
        ready[n] = n * 100.0 + 20 * test_uniform(&rng);
    CHECK(prophet_steps_detect_robust(ready, 200, 2.0, st, &ns) == 0);
    CHECK(ns == 1 && st[0].first == 0 && st[0].last == 199);

    /* 4. Degenerate inputs. */
    CHECK(prophet_steps_detect_robust(ready, 1, 2.0, st, &ns) == 0 && ns == 1);
    CHECK(prophet_steps_detect(ready, 1, 2.0, st, &ns) == 0 && ns == 1);
    memset(ready, 0, sizeof(double) * 10);
    CHECK(prophet_steps_detect(ready, 10, 2.0, st, &ns) == 0 && ns == 1);
    CHECK(prophet_steps_detect_robust(ready, 10, 2.0, st, &ns) == 0 && ns == 1);
    CHECK(prophet_steps_detect(NULL, 10, 2.0, st, &ns) == -EINVAL);
    CHECK(prophet_steps_detect(ready, 0, 2.0, st, &ns) == -EINVAL);
    CHECK(prophet_steps_detect_robust(ready, 10, 0, st, &ns) == -EINVAL);
    CHECK(prophet_steps_detect(ready, PROPHET_MAX_CALLS + 1, 2.0, st, &ns) == -EINVAL);
    printf("steps: ok (mean rule missed %u/100 huge-gap profiles, robust rule 0)\n", mean_missed);
    return 0;
}
