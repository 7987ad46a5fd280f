/* Handle registries: open-addressing pointer sets and a sorted table of memory ranges.
 * Callers hold emu_g.lock. */
#include <stdlib.h>
#include <string.h>

#include "emu_internal.h"

#define EMU_TOMB ((void *)1)

static size_t emu_hash(const void *p, size_t cap)
{
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (size_t)x & (cap - 1);
}

static int emu_ptrset_grow(struct emu_ptrset *s)
{
    size_t ncap = s->cap ? s->cap * 2 : 64;
    while (s->live * 2 >= ncap)
        ncap *= 2;
    void **nslots = calloc(ncap, sizeof(*nslots));
    if (!nslots)
        return -1;
    for (size_t i = 0; i < s->cap; i++) {
        void *p = s->slots[i];
        if (!p || p == EMU_TOMB)
            continue;
        size_t j = emu_hash(p, ncap);
        while (nslots[j])
            j = (j + 1) & (ncap - 1);
        nslots[j] = p;
    }
    free(s->slots);
    s->slots = nslots;
    s->cap = ncap;
    s->used = s->live;
    return 0;
}

int emu_ptrset_add(struct emu_ptrset *s, void *p)
{
    if ((s->used + 1) * 2 > s->cap && emu_ptrset_grow(s))
        return -1;
    size_t j = emu_hash(p, s->cap);
    while (s->slots[j] && s->slots[j] != EMU_TOMB)
        j = (j + 1) & (s->cap - 1);
    if (!s->slots[j])
        s->used++;
    s->slots[j] = p;
    s->live++;
    return 0;
}

static long emu_ptrset_slot(const struct emu_ptrset *s, const void *p)
{
    if (!s->cap || !p || p == EMU_TOMB)
        return -1;
    size_t j = emu_hash(p, s->cap);
    while (s->slots[j]) {
        if (s->slots[j] == p)
            return (long)j;
        j = (j + 1) & (s->cap - 1);
    }
    return -1;
}

int emu_ptrset_has(const struct emu_ptrset *s, const void *p)
{
    return emu_ptrset_slot(s, p) >= 0;
}

int emu_ptrset_del(struct emu_ptrset *s, const void *p)
{
    long j = emu_ptrset_slot(s, p);
    if (j < 0)
        return -1;
    s->slots[j] = EMU_TOMB;
    s->live--;
    return 0;
}

/* First index whose base is > addr. */
static size_t emu_alloc_upper(const struct emu_alloc_table *t, uintptr_t addr)
{
    size_t lo = 0, hi = t->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (t->v[mid].base <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int emu_alloc_insert(struct emu_alloc_table *t, const struct emu_alloc *a)
{
    if (t->n == t->cap) {
        size_t ncap = t->cap ? t->cap * 2 : 64;
        struct emu_alloc *nv = realloc(t->v, ncap * sizeof(*nv));
        if (!nv)
            return -1;
        t->v = nv;
        t->cap = ncap;
    }
    size_t i = emu_alloc_upper(t, a->base);
    memmove(&t->v[i + 1], &t->v[i], (t->n - i) * sizeof(*t->v));
    t->v[i] = *a;
    t->n++;
    return 0;
}

long emu_alloc_find(const struct emu_alloc_table *t, uintptr_t addr)
{
    size_t i = emu_alloc_upper(t, addr);
    if (i == 0)
        return -1;
    const struct emu_alloc *a = &t->v[i - 1];
    if (addr >= a->base && addr - a->base < (a->size ? a->size : 1))
        return (long)(i - 1);
    return -1;
}

void emu_alloc_remove_at(struct emu_alloc_table *t, size_t i)
{
    memmove(&t->v[i], &t->v[i + 1], (t->n - i - 1) * sizeof(*t->v));
    t->n--;
}
