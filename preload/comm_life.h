/* A communicator's life (comm_life.c): the only caller of setup and teardown, calling only
 * downward (preload/README.md, "Layout"). */
#ifndef PROPHET_COMM_LIFE_H
#define PROPHET_COMM_LIFE_H

#include "comm_state.h"

/* Called after a real init/split succeeded. rank/nranks < 0: ask NCCL at setup. */
void prophet_comm_life_created(ncclComm_t handle, int rank, int nranks, const ncclConfig_t *config,
                               int inherit_blocking_from_parent, ncclComm_t parent);
/* Lazy setup on the first scheduled call (context, stream X, gate, learner...). 0 ok. Locked. */
int prophet_comm_setup(prophet_comm_t *c, CUstream st);
/* Marks the comm dead (before destroy/abort), releasing what is pending. */
void prophet_comm_retire(prophet_comm_t *c, int abort);

#endif
