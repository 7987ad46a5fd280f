/* prophet_msg (preload/debug_lines/log_line.h): the level is tested before any argument is
 * evaluated; a line reads "prophet: HOST:PID [RANK] LEVEL text" (NCCL's "host:pid:tid [rank]"),
 * "[RANK]" once a rank was given, a WARN line also "[file.c:N]"; PROPHET_DEBUG_FILE ("%h", "%p")
 * takes the lines instead of stderr, and one that cannot be opened gives one WARN on stderr and
 * stderr. Links preload/debug_lines/log_line.c alone, with its own prophet_cfg. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "debug_lines/log_line.h"

prophet_config_t prophet_cfg;

static int evaluated, bad;

static int touch(void)
{
    return ++evaluated;
}

static void expect(const char *what, const char *got, const char *want)
{
    if (strcmp(got, want) != 0) {
        fprintf(stderr, "FAIL: %s was [%s], want [%s]\n", what, got, want);
        bad = 1;
    }
}

/* Runs the lines between stderr_begin and stderr_end with stderr going to a pipe. */
static int pipe_fd[2], saved_fd;

static void stderr_begin(void)
{
    if (pipe(pipe_fd) != 0 || (saved_fd = dup(2)) < 0)
        exit(2);
    dup2(pipe_fd[1], 2);
}

static void stderr_end(char *buf, size_t len)
{
    ssize_t n;

    dup2(saved_fd, 2);
    close(saved_fd);
    close(pipe_fd[1]);
    n = read(pipe_fd[0], buf, len - 1);
    buf[n > 0 ? n : 0] = '\0';
    close(pipe_fd[0]);
}

static void read_file(const char *path, char *buf, size_t len)
{
    int fd = open(path, O_RDONLY);
    ssize_t n = fd >= 0 ? read(fd, buf, len - 1) : -1;

    buf[n > 0 ? n : 0] = '\0';
    if (fd >= 0)
        close(fd);
}

int main(void)
{
    char buf[2048] = "", want[1024], host[64], dir[] = "/tmp/prophet-log-line.XXXXXX", path[256];
    int line, line2, pid = (int)getpid();

    snprintf(host, sizeof(host), "%s", prophet_msg_host());
    if (!host[0] || strchr(host, '.') || strchr(host, ' ')) {
        fprintf(stderr, "FAIL: host name [%s]\n", host);
        bad = 1;
    }
    prophet_cfg.debug = PROPHET_LOG_WARN;
    prophet_msg(PROPHET_LOG_TRACE, "never %d", touch());
    prophet_msg(PROPHET_LOG_INFO, "never %d", touch());
    if (evaluated != 0) {
        fprintf(stderr, "FAIL: arguments of a disabled level were evaluated %d times\n", evaluated);
        bad = 1;
    }
    /* before a rank is known: host and pid */
    stderr_begin();
    line = __LINE__ + 1;
    prophet_msg(PROPHET_LOG_WARN, "something %d", touch());
    prophet_cfg.debug = PROPHET_LOG_NONE;
    prophet_msg(PROPHET_LOG_WARN, "silenced %d", touch());
    stderr_end(buf, sizeof(buf));
    snprintf(want, sizeof(want), "prophet: %s:%d WARN [test_log_line.c:%d] something 1\n", host,
             pid, line);
    expect("a WARN line without a rank", buf, want);
    if (evaluated != 1) {
        fprintf(stderr, "FAIL: evaluated %d, want 1\n", evaluated);
        bad = 1;
    }
    /* the first rank given is the one lines name */
    prophet_msg_set_rank(3);
    prophet_msg_set_rank(5);
    prophet_cfg.debug = PROPHET_LOG_INFO;
    stderr_begin();
    prophet_msg(PROPHET_LOG_INFO, "info %d", 7);
    stderr_end(buf, sizeof(buf));
    snprintf(want, sizeof(want), "prophet: %s:%d [3] INFO info 7\n", host, pid);
    expect("an INFO line with a rank", buf, want);

    /* PROPHET_DEBUG_FILE: %h, %p and %% expanded; the lines go there, not to stderr */
    prophet_msg_expand_path("/d/%h-%p-%%-%x.log", "node1", 42, path, sizeof(path));
    expect("the expanded pattern", path, "/d/node1-42-%-%x.log");
    if (!mkdtemp(dir))
        return 2;
    snprintf(prophet_cfg.debug_file, sizeof(prophet_cfg.debug_file), "%s/prophet-%%h-%%p.log", dir);
    stderr_begin();
    prophet_msg(PROPHET_LOG_INFO, "to the file %d", 1);
    line2 = __LINE__ + 1;
    prophet_msg(PROPHET_LOG_WARN, "to the file %d", 2);
    stderr_end(buf, sizeof(buf));
    expect("stderr with PROPHET_DEBUG_FILE", buf, "");
    snprintf(path, sizeof(path), "%s/prophet-%s-%d.log", dir, host, pid);
    read_file(path, buf, sizeof(buf));
    snprintf(want, sizeof(want),
             "prophet: %s:%d [3] INFO to the file 1\nprophet: %s:%d [3] WARN [test_log_line.c:%d] "
             "to the file 2\n",
             host, pid, host, pid, line2);
    expect(path, buf, want);
    unlink(path);
    rmdir(dir);

    /* a file that cannot be opened (in a child: a new process opens its own): one WARN on stderr
     * naming it, then every line on stderr */
    fflush(NULL);
    if (fork() == 0) {
        snprintf(prophet_cfg.debug_file, sizeof(prophet_cfg.debug_file),
                 "/nonexistent/dir/prophet-%%p.log");
        stderr_begin();
        prophet_msg(PROPHET_LOG_INFO, "after %d", 1);
        prophet_msg(PROPHET_LOG_INFO, "after %d", 2);
        stderr_end(buf, sizeof(buf));
        snprintf(want, sizeof(want),
                 "cannot open PROPHET_DEBUG_FILE /nonexistent/dir/prophet-%d.log (No such file or "
                 "directory); writing to stderr\nprophet: %s:%d [3] INFO after 1\nprophet: %s:%d "
                 "[3] INFO after 2\n",
                 (int)getpid(), host, (int)getpid(), host, (int)getpid());
        if (!strstr(buf, "WARN [log_line.c:") || !strstr(buf, want) ||
            strncmp(buf, "prophet: ", 9) != 0) {
            fprintf(stderr,
                    "FAIL: stderr with an unopenable file was [%s], want a WARN then [%s]\n", buf,
                    want);
            _exit(1);
        }
        _exit(0);
    } else {
        int st = 0;

        wait(&st);
        if (st != 0)
            bad = 1;
    }
    printf(bad ? "log_line: FAILED\n" : "log_line: all passed\n");
    return bad;
}
