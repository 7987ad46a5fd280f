/* prophet_msg (preload/log_line.h): the level is tested before any argument is evaluated, and a
 * WARN line reads "prophet: WARN [pid P file.c:N] text" (NCCL_DEBUG's pid and file:line). Links
 * preload/log_line.c alone, with its own prophet_cfg. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log_line.h"

prophet_config_t prophet_cfg;

static int evaluated;

static int touch(void)
{
    return ++evaluated;
}

int main(void)
{
    char buf[1024] = "", want[256];
    int fd[2], saved, line, bad = 0;
    ssize_t n;

    prophet_cfg.debug = PROPHET_LOG_WARN;
    prophet_msg(PROPHET_LOG_TRACE, "never %d", touch());
    prophet_msg(PROPHET_LOG_INFO, "never %d", touch());
    if (evaluated != 0) {
        fprintf(stderr, "FAIL: arguments of a disabled level were evaluated %d times\n", evaluated);
        bad = 1;
    }
    if (pipe(fd) != 0 || (saved = dup(2)) < 0)
        return 2;
    dup2(fd[1], 2);
    line = __LINE__ + 1;
    prophet_msg(PROPHET_LOG_WARN, "something %d", touch());
    prophet_cfg.debug = PROPHET_LOG_NONE;
    prophet_msg(PROPHET_LOG_WARN, "silenced %d", touch());
    dup2(saved, 2);
    close(fd[1]);
    n = read(fd[0], buf, sizeof(buf) - 1);
    buf[n > 0 ? n : 0] = '\0';
    snprintf(want, sizeof(want), "prophet: WARN [pid %d test_log_line.c:%d] something 1\n",
             (int)getpid(), line);
    if (strcmp(buf, want) != 0 || evaluated != 1) {
        fprintf(stderr, "FAIL: stderr was [%s], want [%s] (evaluated %d, want 1)\n", buf, want,
                evaluated);
        bad = 1;
    }
    printf(bad ? "log_line: FAILED\n" : "log_line: all passed\n");
    return bad;
}
