/* Deterministic gradient contents: small integers, so that fp32 sums over ranks are exact. */
#ifndef EMU_VALUES_H
#define EMU_VALUES_H

#include <stddef.h>
#include <stdint.h>

#define EMU_VALUE_MOD 17 /* values are in [-8, 8] */

/* A per-element key in 0..16 that depends on seed, iteration, gradient and element. */
static inline unsigned emu_value_key(uint64_t seed, int iter, size_t g, uint64_t i)
{
    uint64_t x = seed * 0x9e3779b97f4a7c15ull ^ ((uint64_t)iter << 40) ^ ((uint64_t)g << 24) ^ i;

    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return (unsigned)(x % EMU_VALUE_MOD);
}

/* Rank r's value for an element with key k. */
static inline float emu_value(unsigned key, int rank)
{
    return (float)((int)((key + (unsigned)rank) % EMU_VALUE_MOD) - 8);
}

/* table[k] = sum over ranks 0..nranks-1 of emu_value(k, r). */
static inline void emu_value_sum_table(int nranks, float table[EMU_VALUE_MOD])
{
    for (unsigned k = 0; k < EMU_VALUE_MOD; k++) {
        int s = 0;
        for (int r = 0; r < nranks; r++)
            s += (int)((k + (unsigned)r) % EMU_VALUE_MOD) - 8;
        table[k] = (float)s;
    }
}

/* --accumulate M: micro-step `micro` of iteration `iter` writes the values of round
 * iter * M + micro, so a sum of an earlier micro-step's gradients shows. */
static inline int emu_value_round(int iter, int micro, int accumulate)
{
    return iter * accumulate + micro;
}

/* The job's own small tensors (loss, metrics, tensor-parallel activations): element i of a rank's
 * tensor is base + (i mod EMU_FILL_PERIOD), base an integer that depends on the rank; the sum
 * over ranks is sum(base) + nranks * (i mod EMU_FILL_PERIOD), exact in fp32 and int64. */
#define EMU_FILL_PERIOD 16

/* --loss-every: rank r's loss in iteration `iter`, an integer in [-6, 6]. */
static inline float emu_loss_value(int iter, int rank)
{
    return (float)((iter * 5 + rank * 3) % 13 - 6);
}

/* --eval-every: the base of fp32 metric `metric` in repetition `rep`, an integer in [-4, 4]. */
static inline float emu_metric_f32(int iter, int rep, int metric, int rank)
{
    return (float)((iter * 7 + rep * 5 + metric * 3 + rank) % 9 - 4);
}

/* --eval-every: the base of the int64 metric: above 2^32, so that it is wrong in any narrower or
 * floating type; the sum over 64 ranks stays below 2^41. */
static inline int64_t emu_metric_i64(int iter, int rep, int rank)
{
    return ((int64_t)(rank + 1) << 34) + (int64_t)iter * 1000 + rep;
}

/* --tp-comm: the base of call `call` of round `round` (emu_value_round), an integer in [-5, 5]. */
static inline float emu_tp_value(int round, int call, int rank)
{
    return (float)((round * 13 + call * 7 + rank) % 11 - 5);
}

#endif
