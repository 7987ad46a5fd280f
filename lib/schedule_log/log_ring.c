/* The MPSC ring behind prophet_log_call(). */
#include "log_ring.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int prophet_log_ring_init(prophet_log_ring_t *r, size_t capacity)
{
    if (!r || capacity < 2 || (capacity & (capacity - 1)) != 0)
        return -EINVAL;
    memset(r, 0, sizeof(*r));
    r->cells = calloc(capacity, sizeof(*r->cells));
    if (!r->cells)
        return -ENOMEM;
    for (size_t i = 0; i < capacity; i++)
        atomic_init(&r->cells[i].seq, i);
    r->mask = capacity - 1;
    atomic_init(&r->head, 0);
    r->tail = 0;
    atomic_init(&r->dropped, 0);
    return 0;
}

void prophet_log_ring_fini(prophet_log_ring_t *r)
{
    if (!r)
        return;
    free(r->cells);
    r->cells = NULL;
}

int prophet_log_ring_push(prophet_log_ring_t *r, const prophet_log_call_t *c)
{
    uint64_t pos = atomic_load_explicit(&r->head, memory_order_relaxed);
    for (;;) {
        prophet_log_cell_t *cell = &r->cells[pos & r->mask];
        uint64_t seq = atomic_load_explicit(&cell->seq, memory_order_acquire);
        int64_t diff = (int64_t)(seq - pos);
        if (diff == 0) {
            if (atomic_compare_exchange_weak_explicit(&r->head, &pos, pos + 1, memory_order_relaxed,
                                                      memory_order_relaxed)) {
                cell->rec = *c;
                atomic_store_explicit(&cell->seq, pos + 1, memory_order_release);
                return 0;
            }
            /* pos was reloaded by the failed CAS */
        } else if (diff < 0) {
            atomic_fetch_add_explicit(&r->dropped, 1, memory_order_relaxed);
            return -EAGAIN;
        } else {
            pos = atomic_load_explicit(&r->head, memory_order_relaxed);
        }
    }
}

int prophet_log_ring_pop(prophet_log_ring_t *r, prophet_log_call_t *out)
{
    prophet_log_cell_t *cell = &r->cells[r->tail & r->mask];
    uint64_t seq = atomic_load_explicit(&cell->seq, memory_order_acquire);
    if ((int64_t)(seq - (r->tail + 1)) < 0)
        return 0; /* empty, or the producer that claimed this cell has not finished its copy */
    *out = cell->rec;
    atomic_store_explicit(&cell->seq, r->tail + r->mask + 1, memory_order_release);
    r->tail++;
    return 1;
}
