/* Step detection on a readiness vector (gradients in program order).
 *
 * Prophet's rule (prophet_steps_detect): a step ends after gradient i when the gap to gradient
 * i+1 exceeds `factor` times the mean gap. One very long gap (a slow layer) inflates the mean and
 * hides every other boundary, and a profile with many near-zero gaps drags it down.
 *
 * The robust rule (prophet_steps_detect_robust) looks at the gaps on a log scale (with a 1 us
 * floor: finer gaps are timer noise) and splits them into "inside a step" and "between steps" with
 * the threshold that maximises the between-class variance (Otsu). It is scale free, one huge gap
 * does not move it, and it only accepts the split when the two classes' typical gaps differ by at
 * least `factor`; otherwise the whole vector is one step. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "sched_internal.h"

#define GAP_FLOOR_US 1.0

static double gap_at(const double *ready_us, uint32_t i)
{
    double g = ready_us[i + 1] - ready_us[i];

    return g > 0 ? g : 0;
}

/* Turns a boundary mask (cut[i] = 1: a step ends after gradient i) into steps. */
static void steps_from_cuts(const double *ready_us, uint32_t n, const uint8_t *cut,
                            prophet_step_t *steps, uint32_t *n_steps)
{
    uint32_t i, k = 0, first = 0;
    double top = ready_us[0];

    for (i = 0; i < n; i++) {
        if (ready_us[i] > top)
            top = ready_us[i];
        if (i == n - 1 || cut[i]) {
            steps[k].first = first;
            steps[k].last = i;
            steps[k].ready_us = top;
            steps[k].gap_after_us = 0;
            k++;
            first = i + 1;
        }
    }
    for (i = 0; i + 1 < k; i++) {
        double g = steps[i + 1].ready_us - steps[i].ready_us;

        steps[i].gap_after_us = g > 0 ? g : 0;
    }
    *n_steps = k;
}

static int check_args(const double *ready_us, uint32_t n, double factor,
                      const prophet_step_t *steps, const uint32_t *n_steps)
{
    if (!ready_us || !steps || !n_steps || n == 0 || n > PROPHET_MAX_CALLS || !(factor > 0))
        return -EINVAL;
    return 0;
}

int prophet_steps_detect(const double *ready_us, uint32_t n, double factor, prophet_step_t *steps,
                         uint32_t *n_steps)
{
    uint8_t cut[PROPHET_MAX_CALLS] = {0};
    double sum = 0, mean;
    uint32_t i;
    int err = check_args(ready_us, n, factor, steps, n_steps);

    if (err)
        return err;
    for (i = 0; i + 1 < n; i++)
        sum += gap_at(ready_us, i);
    mean = n > 1 ? sum / (n - 1) : 0;
    for (i = 0; i + 1 < n; i++)
        cut[i] = mean > 0 && gap_at(ready_us, i) > factor * mean;
    steps_from_cuts(ready_us, n, cut, steps, n_steps);
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* Otsu threshold on sorted values: returns the index k such that v[0..k) is the low class, or 0
 * when no split separates the class means by at least log_sep. */
static uint32_t otsu_split(const double *v, uint32_t m, double log_sep)
{
    double total = 0, left = 0, best = -1;
    uint32_t k, best_k = 0;

    for (k = 0; k < m; k++)
        total += v[k];
    for (k = 1; k < m; k++) {
        double m0, m1, w0, w1, score;

        left += v[k - 1];
        if (v[k] == v[k - 1])
            continue; /* the threshold must fall between distinct values */
        w0 = (double)k / m;
        w1 = 1 - w0;
        m0 = left / k;
        m1 = (total - left) / (m - k);
        score = w0 * w1 * (m1 - m0) * (m1 - m0);
        if (score > best) {
            best = score;
            best_k = k;
        }
    }
    if (best_k == 0)
        return 0;
    /* Typical gap of each class: compare medians, so the split is not accepted on one outlier. */
    if (v[best_k + (m - best_k) / 2] - v[best_k / 2] < log_sep)
        return 0;
    return best_k;
}

int prophet_steps_detect_robust(const double *ready_us, uint32_t n, double factor,
                                prophet_step_t *steps, uint32_t *n_steps)
{
    uint8_t cut[PROPHET_MAX_CALLS] = {0};
    double *lg;
    uint32_t i, m = n - 1, k;
    int err = check_args(ready_us, n, factor, steps, n_steps);

    if (err)
        return err;
    if (n == 1) {
        steps_from_cuts(ready_us, n, cut, steps, n_steps);
        return 0;
    }
    lg = malloc(sizeof(*lg) * m);
    if (!lg)
        return -ENOMEM;
    for (i = 0; i < m; i++)
        lg[i] = log(gap_at(ready_us, i) + GAP_FLOOR_US);
    qsort(lg, m, sizeof(*lg), cmp_double);
    k = otsu_split(lg, m, log(factor));
    if (k > 0) {
        double thr = 0.5 * (lg[k - 1] + lg[k]);

        for (i = 0; i < m; i++)
            cut[i] = log(gap_at(ready_us, i) + GAP_FLOOR_US) > thr;
    }
    free(lg);
    steps_from_cuts(ready_us, n, cut, steps, n_steps);
    return 0;
}
