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

#endif
