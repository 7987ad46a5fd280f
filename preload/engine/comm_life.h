/* A communicator's life (comm_life.c): the only caller of setup and teardown, calling only
 * downward (preload/README.md, "Layout"). */
#ifndef PROPHET_COMM_LIFE_H
#define PROPHET_COMM_LIFE_H

#include "engine/comm_state.h"

/* Called after a real init/split succeeded. rank/nranks < 0: ask NCCL at setup. */
void prophet_comm_life_created(ncclComm_t handle, int rank, int nranks, const ncclConfig_t *config,
                               int inherit_blocking_from_parent, ncclComm_t parent);
/* Lazy setup on the first scheduled call (context, stream X, gate, learner...). 0 ok. Locked. */
int prophet_comm_setup(prophet_comm_t *c, CUstream st);
enum { PROPHET_RETIRE_DESTROY = 0, PROPHET_RETIRE_ABORT, PROPHET_RETIRE_REVOKE };
/* Marks the comm dead before NCCL's Destroy/Finalize (PROPHET_RETIRE_DESTROY: what is held is
 * released), Abort or Revoke (held calls issued if NCCL reports no error, else dropped and the
 * CUDA context stopped: docs/completion-holding.md, "A dropped call"). 0 when done. For Abort and
 * Revoke, PROPHET_RETIRE_BUSY when another thread has held the comm for PROPHET_ABORT_LOCK_MS (it
 * waits inside NCCL for a dead peer, which only the abort ends): nothing was done, and the caller
 * makes the real Abort/Revoke first, then prophet_comm_retire_after. */
#define PROPHET_RETIRE_BUSY 1
int prophet_comm_retire(prophet_comm_t *c, int how);
/* After the real Abort/Revoke that prophet_comm_retire left to its caller (PROPHET_RETIRE_BUSY):
 * held calls are dropped (they can no longer be issued) and the comm is marked dead. */
void prophet_comm_retire_after(prophet_comm_t *c, int how);
/* The preload's sticky error of the newest comm state of handle (a failure of its own, or held
 * calls dropped at Abort/Revoke): 1 and *err, with *freed = 1 when the handle was aborted (NCCL
 * freed it); 0 when there is none. Never blocks. */
int prophet_comm_sticky_error(ncclComm_t handle, ncclResult_t *err, int *freed);

#endif
