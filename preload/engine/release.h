/* Releasing a held block (release.c): launched on X as one NCCL group, the caller's stream gated.
 */
#ifndef PROPHET_RELEASE_H
#define PROPHET_RELEASE_H

#include "engine/comm_state.h"

/* Launches the pending block of c on X and gates its stream. Locked. Returns the real NCCL
 * result of the block (ncclSuccess when nothing was pending). */
ncclResult_t prophet_release_pending(prophet_comm_t *c);
/* Abort/Revoke of a healthy comm (comm_life.c): as prophet_release_pending, but X does not open
 * the block's gate. *gate_left = 1: the caller opens generation c->gpu.gate_gen once the block has
 * completed (prophet_release_open), or stops the context when it cannot know
 * (prophet_hold_block_poisoned); 0: the block went another way (the fallback) and its gate is
 * handled. Locked. */
ncclResult_t prophet_release_pending_shut(prophet_comm_t *c, int *gate_left);
/* Opens gate generation gen of a block that has completed (X writes it). Locked. */
void prophet_release_open(prophet_comm_t *c, uint32_t gen);
/* Releases the pending blocks of every comm whose block was formed by this thread. */
void prophet_release_all_mine(void);
/* Hands a launched block to the poller (ownership of its events moves). Locked. */
void prophet_inflight_push(prophet_comm_t *c, prophet_inflight_t *f);

#endif
