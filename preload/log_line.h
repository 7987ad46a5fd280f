/* PROPHET_DEBUG diagnostics (log_line.c): one line per event on stderr, and the host clock. */
#ifndef PROPHET_LOG_LINE_H
#define PROPHET_LOG_LINE_H

#include <stdint.h>

#include "settings.h"

static inline int prophet_msg_enabled(prophet_log_level_t level)
{
    return level != PROPHET_LOG_NONE && prophet_cfg.debug >= level;
}
/* One line; WARN lines carry the pid and file:line of the call (as NCCL_DEBUG's do). */
void prophet_msg_at(prophet_log_level_t level, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Tests the level before evaluating anything else: arguments cost nothing when it is off. */
#define prophet_msg(level, ...)                                                                    \
    do {                                                                                           \
        if (prophet_msg_enabled(level))                                                            \
            prophet_msg_at((level), __FILE__, __LINE__, __VA_ARGS__);                              \
    } while (0)

/* CLOCK_MONOTONIC in microseconds: the host instants of arrivals, releases and events. */
int64_t prophet_now_us(void);

#endif
