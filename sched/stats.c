/* Robust statistics: median and median absolute deviation by quickselect. */
#include <math.h>

#include "sched_internal.h"

static double select_kth(double *v, size_t n, size_t k)
{
    size_t lo = 0, hi = n - 1;

    while (lo < hi) {
        double pivot = v[lo + (hi - lo) / 2];
        size_t i = lo, j = hi;

        while (i <= j) {
            while (v[i] < pivot)
                i++;
            while (v[j] > pivot)
                j--;
            if (i <= j) {
                double t = v[i];
                v[i] = v[j];
                v[j] = t;
                i++;
                if (j == 0)
                    break;
                j--;
            }
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            break;
    }
    return v[k];
}

double prophet_median(double *v, size_t n)
{
    double hi = select_kth(v, n, n / 2);
    double lo;
    size_t i;

    if (n % 2)
        return hi;
    /* After selection, everything before n/2 is <= hi: the lower middle is their maximum. */
    lo = v[0];
    for (i = 1; i < n / 2; i++)
        if (v[i] > lo)
            lo = v[i];
    return 0.5 * (lo + hi);
}

double prophet_mad(double *v, size_t n, double median)
{
    size_t i;

    for (i = 0; i < n; i++)
        v[i] = fabs(v[i] - median);
    return prophet_median(v, n);
}
