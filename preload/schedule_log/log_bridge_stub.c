/* The schedule-log bridge of a build without the log writer (cmake -DPROPHET_SCHEDULE_LOG=OFF;
 * CMake builds this file instead of log_bridge.c): PROPHET_LOG gives one WARN line, and nothing is
 * written. */
#include "schedule_log/log_bridge.h"
#include "debug_lines/log_line.h"
#include "config/process_config.h"

void prophet_logb_open(prophet_comm_t *c)
{
    if (prophet_cfg.log_dir[0] && c->id == 0)
        prophet_msg(PROPHET_LOG_WARN, "PROPHET_LOG is set but this build has no log writer");
}

void prophet_logb_call(prophet_comm_t *c, const prophet_inflight_t *f, uint32_t i, int64_t ready_us,
                       int64_t launch_us, int64_t complete_us)
{
    (void)c, (void)f, (void)i, (void)ready_us, (void)launch_us, (void)complete_us;
}

void prophet_logb_profile(prophet_comm_t *c)
{
    (void)c;
}

void prophet_logb_plan(prophet_comm_t *c, uint64_t from_iter, const prophet_plan_t *p)
{
    (void)c, (void)from_iter, (void)p;
}

void prophet_logb_net(prophet_comm_t *c, double probe_Bps)
{
    (void)c, (void)probe_Bps;
}

void prophet_logb_sample(prophet_comm_t *c, const prophet_log_sample_t *s)
{
    (void)c, (void)s;
}

void prophet_logb_observed(prophet_comm_t *c, uint64_t iteration, uint64_t bytes, int flags)
{
    (void)c, (void)iteration, (void)bytes, (void)flags;
}

void prophet_logb_close(prophet_comm_t *c)
{
    c->log = NULL;
}
