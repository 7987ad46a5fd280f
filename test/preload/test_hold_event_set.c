/* The holding engine's set of event handles (preload/holding/hold_event_set.c: the interprocess
 * events and the graph events): add, has, forget and list, the count the wrappers' fast path reads
 * kept in step (zero once every handle was forgotten: the set is bounded by the live handles),
 * and handles that share a bucket. Links hold_event_set.c alone, with its own hash. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "holding/hold_event_set.h"

/* hold_tables.c's hash is not linked: one that puts every 4th handle in one bucket */
unsigned prophet_hold_hash_ptr(const void *p, unsigned n)
{
    return (unsigned)((uintptr_t)p / 4 % n);
}

static int bad;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL: %s (line %d)\n", #cond, __LINE__);                              \
            bad = 1;                                                                               \
        }                                                                                          \
    } while (0)

static CUevent ev(uintptr_t i)
{
    return (CUevent)(i * 8 + 8);
}

int main(void)
{
    static atomic_int count;
    static hold_evset_t set = HOLD_EVSET_INIT(&count);
    CUevent *list;
    int n;

    CHECK(prophet_hold_evset_has(&set, ev(1)) == 0);
    CHECK(prophet_hold_evset_list(&set, &list) == 0 && list == NULL);
    /* 1000 handles, 4 per bucket at least (HOLD_EVSET_BUCKETS apart share one) */
    for (uintptr_t i = 0; i < 1000; i++)
        CHECK(prophet_hold_evset_add(&set, ev(i)) == 0);
    CHECK(prophet_hold_evset_add(&set, ev(7)) == 0); /* known: not counted twice */
    CHECK(atomic_load(&count) == 1000);
    for (uintptr_t i = 0; i < 1000; i++)
        CHECK(prophet_hold_evset_has(&set, ev(i)) == 1);
    CHECK(prophet_hold_evset_has(&set, ev(1000)) == 0);
    n = prophet_hold_evset_list(&set, &list);
    CHECK(n == 1000);
    if (n == 1000) {
        char seen[1000] = {0};
        for (int i = 0; i < n; i++) {
            uintptr_t k = ((uintptr_t)list[i] - 8) / 8;
            CHECK(k < 1000 && !seen[k]);
            if (k < 1000)
                seen[k] = 1;
        }
    }
    free(list);
    /* forgetting every other one, then the rest: the count follows, down to zero */
    for (uintptr_t i = 0; i < 1000; i += 2)
        prophet_hold_evset_forget(&set, ev(i));
    prophet_hold_evset_forget(&set, ev(0)); /* not in the set any more: nothing happens */
    CHECK(atomic_load(&count) == 500);
    for (uintptr_t i = 0; i < 1000; i++)
        CHECK(prophet_hold_evset_has(&set, ev(i)) == (int)(i & 1));
    for (uintptr_t i = 1; i < 1000; i += 2)
        prophet_hold_evset_forget(&set, ev(i));
    CHECK(atomic_load(&count) == 0);
    CHECK(prophet_hold_evset_list(&set, &list) == 0 && list == NULL);
    /* a handle reused after it was forgotten is new */
    for (int round = 0; round < 10000; round++) {
        prophet_hold_evset_add(&set, ev(3));
        prophet_hold_evset_forget(&set, ev(3));
    }
    CHECK(atomic_load(&count) == 0 && prophet_hold_evset_has(&set, ev(3)) == 0);
    if (!bad)
        printf("PASS: hold_event_set\n");
    return bad;
}
