/* Making dependencies real (hold_gates.c), inside the holding engine only. Engine lock held by the
 * caller unless said otherwise (hold_tables.h, "Locking"). */
#ifndef PROPHET_HOLD_GATES_H
#define PROPHET_HOLD_GATES_H

#include "holding/hold_tables.h"

CUresult prophet_hold_gate(CUstream real, const hold_dep_t *d);
CUresult prophet_hold_rec_issue_on_stream(hold_rec_t *r);
void prophet_hold_rec_issued(hold_rec_t *r);
CUresult prophet_hold_materialise(hold_stream_t *h);
void prophet_hold_collect_open(const hold_depset_t *s, hold_depset_t *out);
/* Drops the engine lock around each release. */
void prophet_hold_release_or_wait(hold_dep_t *open, int n);
/* Real work on s (takes the engine lock: not held by the caller); may_release: the open blocks
 * behind s are released first (H4; 0 on the scheduler's own path, comm lock held). */
void prophet_hold_work(CUstream s, int ptsz, int may_release);

#endif
