/* A set of event handles (hold_event_set.c), inside the holding engine only: the interprocess
 * events and the graph events of docs/completion-holding.md ("Interprocess events"; "Events
 * ordered out of the engine's sight", graph event nodes), the handles whose records someone waits
 * on where the engine cannot see. Hashed; each set has its own lock, a leaf (taken under the engine
 * lock, never the other way round; nothing else is taken while it is held), and a count that is
 * zero while the set is empty: a wrapper's fast path reads only the count (holding.h). */
#ifndef PROPHET_HOLD_EVENT_SET_H
#define PROPHET_HOLD_EVENT_SET_H

#include <cuda.h>
#include <pthread.h>
#include <stdatomic.h>

#define HOLD_EVSET_BUCKETS 256

typedef struct hold_evnode {
    struct hold_evnode *next;
    CUevent ev;
} hold_evnode_t;

typedef struct hold_evset {
    pthread_mutex_t lock;
    /* handles in the set, plus one for good once a handle could not be remembered (lookups then
     * go on): zero means nothing to look up */
    atomic_int *n;
    atomic_int untracked; /* a handle could not be remembered (out of memory): has() is always 1 */
    hold_evnode_t *b[HOLD_EVSET_BUCKETS];
} hold_evset_t;

/* A set whose count is *count (read by the wrappers without the lock). */
#define HOLD_EVSET_INIT(count)                                                                     \
    {                                                                                              \
        .lock = PTHREAD_MUTEX_INITIALIZER, .n = (count)                                            \
    }

/* Adds e: 0 (also when known), -1 when it could not be remembered (out of memory: the set is
 * untracked from now on). */
int prophet_hold_evset_add(hold_evset_t *s, CUevent e);
/* Whether e is in the set (1 for every handle once the set is untracked). */
int prophet_hold_evset_has(hold_evset_t *s, CUevent e);
/* Forgets e (its handle was destroyed, or reused). */
void prophet_hold_evset_forget(hold_evset_t *s, CUevent e);
/* A copy of the handles in the set, taken under its lock (*out: NULL when none; free() it): their
 * number, or -1 when out of memory. */
int prophet_hold_evset_list(hold_evset_t *s, CUevent **out);

#endif
