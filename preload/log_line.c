/* PROPHET_DEBUG diagnostics: one line per event on stderr, "prophet: LEVEL text" ("prophet: WARN
 * [pid P file.c:N] text" for warnings, so that a job's many ranks can be told apart). Warnings are
 * rate-limited (at most PROPHET_WARN_BURST per second) so that a broken job cannot flood its log.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log_line.h"
#include "settings.h"

#define PROPHET_WARN_BURST 20

static const char *const prophet_level_names[] = {PROPHET_VALUES_debug(PROPHET_ENUM_NAME)};
static _Atomic int64_t prophet_warn_window;
static _Atomic int prophet_warn_count;

static int prophet_warn_allowed(void)
{
    int64_t sec = prophet_now_us() / 1000000;
    int64_t win = atomic_load(&prophet_warn_window);

    if (win != sec && atomic_compare_exchange_strong(&prophet_warn_window, &win, sec))
        atomic_store(&prophet_warn_count, 0);
    return atomic_fetch_add(&prophet_warn_count, 1) < PROPHET_WARN_BURST;
}

/* __FILE__ without its directories */
static const char *prophet_basename(const char *file)
{
    const char *slash = strrchr(file, '/');
    return slash ? slash + 1 : file;
}

void prophet_msg_at(prophet_log_level_t level, const char *file, int line_no, const char *fmt, ...)
{
    char line[768];
    int n;
    va_list ap;

    if (!prophet_msg_enabled(level))
        return;
    if (level == PROPHET_LOG_WARN && !prophet_warn_allowed())
        return;
    if (level == PROPHET_LOG_WARN)
        n = snprintf(line, sizeof(line), "prophet: WARN [pid %d %s:%d] ", (int)getpid(),
                     prophet_basename(file), line_no);
    else
        n = snprintf(line, sizeof(line), "prophet: %s ", prophet_level_names[level]);
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
    va_end(ap);
    n = (int)strlen(line);
    line[n++] = '\n';
    /* one write(2): lines of concurrent ranks and threads do not interleave */
    if (write(STDERR_FILENO, line, (size_t)n) < 0)
        return;
}

int64_t prophet_now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}
