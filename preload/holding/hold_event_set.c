/* A set of event handles (hold_event_set.h): the interprocess events and the graph events of
 * docs/completion-holding.md ("Interprocess events"; "Events ordered out of the engine's sight").
 * Hashed chains under the set's own lock; the count is kept in step for the wrappers' fast path. */
#include "holding/hold_event_set.h"

#include <stdlib.h>

#include "holding/hold_tables.h"

static hold_evnode_t **hold_evset_slot(hold_evset_t *s, CUevent e)
{
    hold_evnode_t **p = &s->b[prophet_hold_hash_ptr(e, HOLD_EVSET_BUCKETS)];

    while (*p && (*p)->ev != e)
        p = &(*p)->next;
    return p;
}

int prophet_hold_evset_add(hold_evset_t *s, CUevent e)
{
    hold_evnode_t **p, *x;
    int rc = 0;

    pthread_mutex_lock(&s->lock);
    p = hold_evset_slot(s, e);
    if (!*p) {
        if ((x = calloc(1, sizeof(*x))) != NULL) {
            x->ev = e;
            *p = x;
            atomic_fetch_add(s->n, 1);
        } else {
            rc = -1;
            if (!atomic_exchange(&s->untracked, 1))
                atomic_fetch_add(s->n, 1); /* keeps every lookup looking */
        }
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

int prophet_hold_evset_has(hold_evset_t *s, CUevent e)
{
    int has;

    if (!atomic_load_explicit(s->n, memory_order_relaxed))
        return 0; /* an empty set: the common case, no lookup */
    if (atomic_load_explicit(&s->untracked, memory_order_relaxed))
        return 1;
    pthread_mutex_lock(&s->lock);
    has = *hold_evset_slot(s, e) != NULL;
    pthread_mutex_unlock(&s->lock);
    return has;
}

void prophet_hold_evset_forget(hold_evset_t *s, CUevent e)
{
    hold_evnode_t **p, *x;

    pthread_mutex_lock(&s->lock);
    p = hold_evset_slot(s, e);
    if ((x = *p) != NULL) {
        *p = x->next;
        free(x);
        atomic_fetch_sub(s->n, 1);
    }
    pthread_mutex_unlock(&s->lock);
}

int prophet_hold_evset_list(hold_evset_t *s, CUevent **out)
{
    int n = 0, cap;

    *out = NULL;
    pthread_mutex_lock(&s->lock);
    cap = atomic_load(s->n); /* at least the handles in the set */
    if (cap > 0 && !(*out = malloc((size_t)cap * sizeof(**out))))
        n = -1;
    for (int b = 0; n >= 0 && b < HOLD_EVSET_BUCKETS; b++)
        for (hold_evnode_t *x = s->b[b]; x && n < cap; x = x->next)
            (*out)[n++] = x->ev;
    pthread_mutex_unlock(&s->lock);
    return n;
}
