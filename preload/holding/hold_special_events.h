/* What the event record path asks of the interprocess events (hold_special_events.c), inside the
 * holding engine only. */
#ifndef PROPHET_HOLD_SPECIAL_EVENTS_H
#define PROPHET_HOLD_SPECIAL_EVENTS_H

#include "holding/hold_tables.h"

/* e is a known interprocess event (no lookup while prophet_hold_nipc_ is zero). */
int prophet_hold_ipc_has(CUevent e);
/* A record of interprocess event e on h: engine lock held (dropped around releases); the driver
 * records e after it. */
void prophet_hold_ipc_record(hold_stream_t *h, CUevent e);

#endif
