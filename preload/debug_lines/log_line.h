/* PROPHET_DEBUG diagnostics (log_line.c): one line per event, "prophet: HOST:PID [RANK] LEVEL
 * text", on stderr or in PROPHET_DEBUG_FILE; and the host clock. */
#ifndef PROPHET_LOG_LINE_H
#define PROPHET_LOG_LINE_H

#include <stddef.h>
#include <stdint.h>

#include "config/process_config.h"

static inline int prophet_msg_enabled(prophet_log_level_t level)
{
    return level != PROPHET_LOG_NONE && prophet_cfg.debug >= level;
}
/* One line; WARN lines also carry the file:line of the call (as NCCL_DEBUG's do). */
void prophet_msg_at(prophet_log_level_t level, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Tests the level before evaluating anything else: arguments cost nothing when it is off. */
#define prophet_msg(level, ...)                                                                    \
    do {                                                                                           \
        if (prophet_msg_enabled(level))                                                            \
            prophet_msg_at((level), __FILE__, __LINE__, __VA_ARGS__);                              \
    } while (0)

/* The rank that lines name: the first one given (the process's first communicator's); until
 * then lines carry host and pid only. */
void prophet_msg_set_rank(int rank);
int prophet_msg_rank_get(void); /* -1: none yet */
/* The host name as lines write it (up to its first dot). */
const char *prophet_msg_host(void);
/* PROPHET_DEBUG_FILE's pattern with "%h" the host, "%p" the pid and "%%" a percent sign, into
 * out. 0 ok, -1 too long. */
int prophet_msg_expand_path(const char *pattern, const char *host, int pid, char *out, size_t len);

/* CLOCK_MONOTONIC in microseconds: the host instants of arrivals, releases and events. */
int64_t prophet_now_us(void);

#endif
