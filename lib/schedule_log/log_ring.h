/* A bounded multi-producer single-consumer ring of log call records (Vyukov-style: each cell
 * carries a sequence number). Producers never block and never take a lock: a full ring drops the
 * record and counts it. One consumer (the writer thread) drains it. */
#ifndef PROPHET_LOG_RING_H
#define PROPHET_LOG_RING_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "prophet/log.h"

typedef struct prophet_log_cell {
    _Atomic uint64_t seq;
    prophet_log_call_t rec;
} prophet_log_cell_t;

typedef struct prophet_log_ring {
    prophet_log_cell_t *cells;
    uint64_t mask;
    _Alignas(64) _Atomic uint64_t head; /* next position producers claim */
    _Alignas(64) uint64_t tail;         /* next position the consumer reads */
    _Alignas(64) _Atomic uint64_t dropped;
} prophet_log_ring_t;

/* capacity must be a power of two. 0 or -ENOMEM / -EINVAL. */
int prophet_log_ring_init(prophet_log_ring_t *r, size_t capacity);
void prophet_log_ring_fini(prophet_log_ring_t *r);
/* Hot path: 0 when stored, -EAGAIN when the ring was full (the record is counted as dropped). */
int prophet_log_ring_push(prophet_log_ring_t *r, const prophet_log_call_t *c);
/* Consumer only: 1 when a record was taken into *out, 0 when the ring is empty. */
int prophet_log_ring_pop(prophet_log_ring_t *r, prophet_log_call_t *out);

#endif
