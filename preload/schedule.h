/* One intercepted ncclAllReduce (schedule.c): observe, pass through or hold. */
#ifndef PROPHET_SCHEDULE_H
#define PROPHET_SCHEDULE_H

#include "comm_state.h"

/* Block mode measures readiness in "measurement iterations": blocks of PROPHET_BLOCK_MAX
 * consecutive calls (phase alternating by half a block), so that no gate of ours stands between
 * the ready events of a block's members. Every iteration measures until a plan is installed, then
 * one in PROPHET_MEASURE_EVERY. The first plan is agreed after PROPHET_MEASURE_WARMUP of them. */
#define PROPHET_MEASURE_EVERY 8
#define PROPHET_MEASURE_WARMUP 4

ncclResult_t prophet_allreduce(prophet_comm_t *c, const void *sendbuff, void *recvbuff,
                               size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                               CUstream stream);
/* Before any other intercepted call on c: release its pending block (program-order point). */
void prophet_comm_barrier(ncclComm_t comm);

#endif
