/* The closed loop's instruments (iteration_samples.c): plans judged by the iteration time they
 * measure. */
#ifndef PROPHET_ITERATION_SAMPLES_H
#define PROPHET_ITERATION_SAMPLES_H

#include "engine/comm_state.h"

/* When the plan in force is passthrough or kept, one iteration in this many is observed
 * (measured); calls of the others go straight to NCCL. The closed loop's contract
 * (prophet/sched.h): its profile readings come this often. */
#define PROPHET_SAMPLE_EVERY PROPHET_TRIAL_SAMPLE_EVERY

/* The loop runs in the default mode (PROPHET_GATE=hold) when PROPHET_POLICY is not given. */
int prophet_loop_on(void);
/* The learner relearned: nothing is in force, the trials start over. Locked. */
void prophet_loop_reset(prophet_comm_t *c);
/* At an iteration's first call, before the agreement step: rank 0 closes the previous
 * iteration (a sample unless an extra call came) and turns every iteration whose GPU time is
 * known into a sample of the candidate that ran it (logged as a `sample` record). Locked. */
void prophet_loop_iter_start(prophet_comm_t *c, uint64_t iteration, int64_t now_us);
/* After the agreement and measurement steps of that call: whether this iteration is a sample;
 * rank 0 records its mark on the call's stream. Locked. */
void prophet_loop_iter_mark(prophet_comm_t *c, uint64_t iteration, CUstream stream);
/* Rank 0 at a plan broadcast: the plan of the candidate the trials put in force next. */
int prophet_loop_plan(prophet_comm_t *c, const prophet_planner_opts_t *po,
                      const prophet_profile_t *prof, const prophet_net_t *net, prophet_plan_t *out);
/* Every rank, when an agreed plan is installed. */
void prophet_loop_installed(prophet_comm_t *c, const prophet_plan_t *plan, uint64_t iteration);

#endif
