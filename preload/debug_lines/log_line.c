/* PROPHET_DEBUG diagnostics: one line per event, "prophet: HOST:PID [RANK] LEVEL text" (NCCL's
 * "host:pid:tid [rank]"; "[RANK]" once the process's first communicator gave it), and for
 * warnings "prophet: HOST:PID [RANK] WARN [file.c:N] text". Lines go to stderr, or to
 * PROPHET_DEBUG_FILE ("%h" the host, "%p" the pid), opened on the first line of each process.
 * Warnings are rate-limited (at most PROPHET_WARN_BURST per second) so that a broken job cannot
 * flood its log. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "debug_lines/log_line.h"
#include "config/process_config.h"

#define PROPHET_WARN_BURST 20
#define PROPHET_HOST_MAX 64

static const char *const prophet_level_names[] = {PROPHET_VALUES_debug(PROPHET_ENUM_NAME)};
static _Atomic int64_t prophet_warn_window;
static _Atomic int prophet_warn_count;
static _Atomic int prophet_msg_rank = -1;
static pthread_once_t prophet_host_once = PTHREAD_ONCE_INIT;
static char prophet_host[PROPHET_HOST_MAX] = "?";
static pthread_mutex_t prophet_out_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int prophet_out_fd = STDERR_FILENO;
static _Atomic int prophet_out_pid; /* the process that opened prophet_out_fd; 0: none yet */

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

/* The host name up to its first dot (as NCCL writes it). */
static void prophet_host_load(void)
{
    char *dot;

    if (gethostname(prophet_host, sizeof(prophet_host)) != 0)
        snprintf(prophet_host, sizeof(prophet_host), "?");
    prophet_host[sizeof(prophet_host) - 1] = '\0';
    if ((dot = strchr(prophet_host, '.')) && dot != prophet_host)
        *dot = '\0';
}

const char *prophet_msg_host(void)
{
    pthread_once(&prophet_host_once, prophet_host_load);
    return prophet_host;
}

void prophet_msg_set_rank(int rank)
{
    int none = -1;

    if (rank >= 0)
        atomic_compare_exchange_strong(&prophet_msg_rank, &none, rank);
}

int prophet_msg_rank_get(void)
{
    return atomic_load(&prophet_msg_rank);
}

/* "prophet: HOST:PID [RANK] LEVEL " (WARN: and "[file.c:N] ") into line; its length. */
static int prophet_msg_prefix(char *line, size_t len, prophet_log_level_t level, const char *file,
                              int line_no)
{
    char rank[16] = "";
    int r = prophet_msg_rank_get(), n;

    if (r >= 0)
        snprintf(rank, sizeof(rank), " [%d]", r);
    n = snprintf(line, len, "prophet: %s:%d%s %s ", prophet_msg_host(), (int)getpid(), rank,
                 prophet_level_names[level]);
    if (level == PROPHET_LOG_WARN && n > 0 && (size_t)n < len)
        n += snprintf(line + n, len - (size_t)n, "[%s:%d] ", prophet_basename(file), line_no);
    return n > 0 && (size_t)n < len ? n : (int)len - 1;
}

/* One line to fd in one write(2): lines of concurrent ranks and threads do not interleave. */
static void prophet_msg_write(int fd, prophet_log_level_t level, const char *file, int line_no,
                              const char *fmt, va_list ap)
{
    char line[768];
    int n = prophet_msg_prefix(line, sizeof(line), level, file, line_no);

    vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
    n = (int)strlen(line);
    line[n++] = '\n';
    if (write(fd, line, (size_t)n) < 0)
        return;
}

__attribute__((format(printf, 4, 5))) static void
prophet_msg_stderr(prophet_log_level_t level, const char *file, int line_no, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    prophet_msg_write(STDERR_FILENO, level, file, line_no, fmt, ap);
    va_end(ap);
}

int prophet_msg_expand_path(const char *pattern, const char *host, int pid, char *out, size_t len)
{
    size_t used = 0;
    int n;

    if (!len)
        return -1;
    for (const char *p = pattern; *p; p++) {
        if (p[0] == '%' && (p[1] == 'h' || p[1] == 'p' || p[1] == '%')) {
            p++;
            if (*p == 'h')
                n = snprintf(out + used, len - used, "%s", host);
            else if (*p == 'p')
                n = snprintf(out + used, len - used, "%d", pid);
            else
                n = snprintf(out + used, len - used, "%%");
        } else {
            n = snprintf(out + used, len - used, "%c", *p);
        }
        if (n < 0 || (size_t)n >= len - used)
            return -1;
        used += (size_t)n;
    }
    out[used] = '\0';
    return 0;
}

/* Where this process's lines go: PROPHET_DEBUG_FILE, opened once per process (a forked child
 * opens its own: "%p" names another file), else stderr. A file that cannot be opened: one WARN
 * on stderr, and stderr from then on. */
static int prophet_msg_fd(void)
{
    int pid, fd, old;
    char path[PROPHET_PATH_MAX + 128];

    if (!prophet_cfg.debug_file[0])
        return STDERR_FILENO;
    pid = (int)getpid();
    if (atomic_load_explicit(&prophet_out_pid, memory_order_acquire) == pid)
        return atomic_load(&prophet_out_fd);
    pthread_mutex_lock(&prophet_out_lock);
    if (atomic_load(&prophet_out_pid) == pid)
        goto out;
    old = atomic_load(&prophet_out_fd);
    if (old != STDERR_FILENO)
        close(old); /* a forked child's copy of its parent's file */
    fd = -1;
    errno = ENAMETOOLONG;
    if (prophet_msg_expand_path(prophet_cfg.debug_file, prophet_msg_host(), pid, path,
                                sizeof(path)) == 0)
        fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    else
        snprintf(path, sizeof(path), "%s", prophet_cfg.debug_file);
    if (fd < 0) {
        if (prophet_msg_enabled(PROPHET_LOG_WARN))
            prophet_msg_stderr(PROPHET_LOG_WARN, __FILE__, __LINE__,
                               "cannot open PROPHET_DEBUG_FILE %s (%s); writing to stderr", path,
                               strerror(errno));
        fd = STDERR_FILENO;
    }
    atomic_store(&prophet_out_fd, fd);
    atomic_store_explicit(&prophet_out_pid, pid, memory_order_release);
out:
    pthread_mutex_unlock(&prophet_out_lock);
    return atomic_load(&prophet_out_fd);
}

void prophet_msg_at(prophet_log_level_t level, const char *file, int line_no, const char *fmt, ...)
{
    va_list ap;
    int fd;

    if (!prophet_msg_enabled(level))
        return;
    if (level == PROPHET_LOG_WARN && !prophet_warn_allowed())
        return;
    fd = prophet_msg_fd();
    va_start(ap, fmt);
    prophet_msg_write(fd, level, file, line_no, fmt, ap);
    va_end(ap);
}

int64_t prophet_now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}
