/* The start line: one INFO line from rank 0 at its first communicator, saying what is active
 * (version, NCCL, gate, planner or closed loop, eBPF probe, where lines, logs and traces go). */
#include <stdatomic.h>
#include <stdio.h>

#include "engine/iteration_samples.h"
#include "debug_lines/log_line.h"
#include "real_libs/nccl_symbols.h"
#include "config/process_config.h"
#include "engine/start_line.h"

#ifndef PROPHET_VERSION_STRING
#define PROPHET_VERSION_STRING "unknown"
#endif

static atomic_flag prophet_start_said = ATOMIC_FLAG_INIT;

/* The planner part: the closed loop, or the one policy in force. */
static const char *prophet_start_planner(char *buf, size_t len)
{
    if (prophet_loop_on())
        snprintf(buf, len, "closed loop (every planner tried, the best measured kept)");
    else if (prophet_cfg.gate == PROPHET_GATE_OBSERVE)
        snprintf(buf, len, "policy %s (planned and logged only)",
                 prophet_policy_name(prophet_cfg_policy()));
    else
        snprintf(buf, len, "policy %s", prophet_policy_name(prophet_cfg_policy()));
    return buf;
}

static const char *prophet_start_logs(char *buf, size_t len)
{
    if (!prophet_cfg.log_dir[0])
        snprintf(buf, len, "schedule logs off");
    else
        snprintf(buf, len, "schedule logs%s in %s", prophet_cfg.trace ? " and traces" : "",
                 prophet_cfg.log_dir);
    return buf;
}

void prophet_start_line(int rank)
{
    static const char *const bwmon[] = {PROPHET_VALUES_bwmon(PROPHET_ENUM_NAME)};
    char nccl[32], planner[128], logs[PROPHET_PATH_MAX + 64];

    if (rank != 0 || !prophet_msg_enabled(PROPHET_LOG_INFO) ||
        atomic_flag_test_and_set(&prophet_start_said))
        return;
    prophet_msg(PROPHET_LOG_INFO,
                "prophet %s started: NCCL %s, gate %s, %s, eBPF probe %s (%s), %s, lines to %s",
                PROPHET_VERSION_STRING,
                prophet_nccl_version_text(prophet_nccl_version(), nccl, sizeof(nccl)),
                prophet_gate_name(prophet_cfg.gate),
                prophet_start_planner(planner, sizeof(planner)),
                prophet_cfg.bwmon == PROPHET_BWMON_OFF ? "off" : "on", bwmon[prophet_cfg.bwmon],
                prophet_start_logs(logs, sizeof(logs)),
                prophet_cfg.debug_file[0] ? prophet_cfg.debug_file : "stderr");
}
