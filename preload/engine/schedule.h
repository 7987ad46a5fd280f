/* One intercepted ncclAllReduce (schedule.c): observe, pass through or hold. */
#ifndef PROPHET_SCHEDULE_H
#define PROPHET_SCHEDULE_H

#include "engine/comm_state.h"

/* Hold mode measures readiness in "measurement iterations": blocks of PROPHET_BLOCK_MAX
 * consecutive calls (phase alternating by half a block), so that no gate of ours stands between
 * the ready events of a block's members. Every iteration measures until a plan is installed, then
 * one in PROPHET_MEASURE_EVERY. The first plan is agreed after PROPHET_MEASURE_WARMUP of them. */
#define PROPHET_MEASURE_EVERY 8
#define PROPHET_MEASURE_WARMUP 4

/* Unsettled (a job the preload cannot help pays next to nothing): in the default mode,
 * a comm with no agreed plan whose learner has searched for the iteration through
 * PROPHET_UNSETTLED_SEARCH calls, or broken PROPHET_UNSETTLED_RELEARNS locks, since its last plan
 * (Horovod: fusion makes the calls differ between iterations) observes only sampled runs: of its
 * calls that are not held, PROPHET_BLOCK_MAX consecutive ones in every PROPHET_SAMPLE_EVERY runs
 * (iteration_samples.h); the others go straight to NCCL. The learner still sees every call: a
 * sequence that becomes periodic is locked, held and planned as usual, and a plan settles the comm.
 */
#define PROPHET_UNSETTLED_SEARCH 1024
#define PROPHET_UNSETTLED_RELEARNS 8

ncclResult_t prophet_allreduce(prophet_comm_t *c, const void *sendbuff, void *recvbuff,
                               size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                               CUstream stream);
/* Before any other intercepted call on c: release its pending block (program-order point). */
void prophet_comm_barrier(ncclComm_t comm);

#endif
