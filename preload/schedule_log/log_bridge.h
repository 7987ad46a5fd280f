/* The JSON schedule log of a comm (log_bridge.c; lib/schedule_log/), when PROPHET_LOG is set. */
#ifndef PROPHET_LOG_BRIDGE_H
#define PROPHET_LOG_BRIDGE_H

#include "comm.h"
#include "prophet/log.h"

void prophet_logb_open(prophet_comm_t *c);
void prophet_logb_call(prophet_comm_t *c, const prophet_inflight_t *f, uint32_t i, int64_t ready_us,
                       int64_t launch_us, int64_t complete_us);
void prophet_logb_profile(prophet_comm_t *c);
void prophet_logb_plan(prophet_comm_t *c, uint64_t from_iter, const prophet_plan_t *p);
void prophet_logb_net(prophet_comm_t *c, double probe_Bps);
void prophet_logb_sample(prophet_comm_t *c, const prophet_log_sample_t *s);
/* A call the learner placed in the iteration (flags: its PROPHET_LEARN_*): the job's step count. */
void prophet_logb_observed(prophet_comm_t *c, uint64_t iteration, uint64_t bytes, int flags);
void prophet_logb_close(prophet_comm_t *c);

#endif
