/* Releasing a held block (release.c): launched on X as one NCCL group, the caller's stream gated.
 */
#ifndef PROPHET_RELEASE_H
#define PROPHET_RELEASE_H

#include "comm_state.h"

/* Launches the pending block of c on X and gates its stream. Locked. Returns the real NCCL
 * result of the block (ncclSuccess when nothing was pending). */
ncclResult_t prophet_release_pending(prophet_comm_t *c);
/* Releases the pending blocks of every comm whose block was formed by this thread. */
void prophet_release_all_mine(void);
/* Hands a launched block to the poller (ownership of its events moves). Locked. */
void prophet_inflight_push(prophet_comm_t *c, prophet_inflight_t *f);

#endif
