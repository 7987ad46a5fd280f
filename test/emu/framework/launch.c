/* Forking the rank processes, waiting for them, and killing them on failure or timeout. */
#include "launch.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rank.h"

#define EMU_GRACE_S 2.0 /* after a rank failed, the others get this long to fail or finish */

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void kill_all(const pid_t *pids, const int *alive, int n)
{
    for (int r = 0; r < n; r++)
        if (alive[r])
            kill(pids[r], SIGKILL);
}

static int rank_of(const pid_t *pids, int n, pid_t pid)
{
    for (int r = 0; r < n; r++)
        if (pids[r] == pid)
            return r;
    return -1;
}

/* Records one exited child; returns 1 when it failed. */
static int reap(int rank, int status)
{
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    if (WIFEXITED(status))
        fprintf(stderr, "prophet-emu: rank %d exited with status %d\n", rank, WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        fprintf(stderr, "prophet-emu: rank %d killed by signal %d (%s)\n", rank, WTERMSIG(status),
                strsignal(WTERMSIG(status)));
    return 1;
}

static int wait_all(const struct emu_options *opt, pid_t *pids, int *alive)
{
    int n = opt->ranks, left = n, failed = 0, killed = 0, timed_out = 0;
    double start = now_s(), grace_end = 0;

    while (left > 0) {
        int status;
        pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid > 0) {
            int r = rank_of(pids, n, pid);
            if (r < 0)
                continue;
            alive[r] = 0;
            left--;
            if (!killed && reap(r, status) && !failed++)
                grace_end = now_s() + EMU_GRACE_S;
            continue;
        }
        if (pid < 0 && errno != EINTR && errno != ECHILD)
            break;
        if (!killed && failed && now_s() > grace_end) {
            fprintf(stderr, "prophet-emu: killing the %d remaining rank(s) after a failure\n",
                    left);
            kill_all(pids, alive, n);
            killed = 1;
        }
        if (!killed && now_s() - start > opt->timeout_s) {
            fprintf(stderr, "prophet-emu: timeout after %g s; killing %d rank(s)\n", opt->timeout_s,
                    left);
            kill_all(pids, alive, n);
            killed = 1;
            timed_out = !failed;
        }
        usleep(2000);
    }
    if (timed_out)
        return EMU_EXIT_TIMEOUT;
    return failed ? EMU_EXIT_FAIL : EMU_EXIT_OK;
}

int emu_launch(const struct emu_options *opt, const struct emu_profile *prof, struct emu_shared *sh,
               const ncclUniqueId *id)
{
    pid_t pids[EMU_MAX_RANKS] = {0};
    int alive[EMU_MAX_RANKS] = {0};

    fflush(NULL);
    for (int r = 0; r < opt->ranks; r++) {
        pid_t pid = fork();
        if (pid < 0) {
            perror("prophet-emu: fork");
            kill_all(pids, alive, r);
            while (wait(NULL) > 0)
                ;
            return EMU_EXIT_FAIL;
        }
        if (pid == 0) {
            int code = emu_rank_main(opt, prof, sh, id, r);
            fflush(NULL);
            _exit(code);
        }
        pids[r] = pid;
        alive[r] = 1;
    }
    return wait_all(opt, pids, alive);
}
