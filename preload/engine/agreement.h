/* Plan agreement (agreement.c): broadcast from rank 0, installation two iterations later. */
#ifndef PROPHET_AGREEMENT_H
#define PROPHET_AGREEMENT_H

#include "engine/comm_state.h"

/* At the first call of an iteration: starts a broadcast when due, installs an agreed plan when
 * its iteration has come. Locked, pending block already released. */
void prophet_agreement_step(prophet_comm_t *c, uint64_t iteration);

#endif
