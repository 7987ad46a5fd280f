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

#include "emu_cuda.h"
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

/* --kill-rank: how long after the deliberate kill rank r exited (printed and kept for the JSON). */
static void note_exit_after_kill(const struct emu_options *opt, struct emu_shared *sh, int r)
{
    uint64_t k = atomic_load(&sh->kill_ns);

    if (opt->kill_rank < 0 || r == opt->kill_rank || !k)
        return;
    sh->exit_after_kill_s[r] = now_s() - (double)k / 1e9;
    fprintf(stderr, "prophet-emu: rank %d exited %.3f s after rank %d was killed\n", r,
            sh->exit_after_kill_s[r], opt->kill_rank);
}

static int wait_all(const struct emu_options *opt, struct emu_shared *sh, pid_t *pids, int *alive)
{
    int n = opt->ranks, left = n, failed = 0, killed = 0, timed_out = 0;
    /* --kill-rank: the survivors must fail on their own; no grace kill, only --timeout */
    int fault = opt->kill_rank >= 0;
    double start = now_s(), grace_end = 0;

    for (int r = 0; r < n; r++)
        sh->exit_after_kill_s[r] = -1;
    while (left > 0) {
        int status;
        pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid > 0) {
            int r = rank_of(pids, n, pid);
            if (r < 0)
                continue;
            alive[r] = 0;
            left--;
            if (!killed)
                note_exit_after_kill(opt, sh, r);
            if (!killed && reap(r, status) && !failed++)
                grace_end = now_s() + EMU_GRACE_S;
            continue;
        }
        if (pid < 0 && errno != EINTR && errno != ECHILD)
            break;
        if (fault && !killed && left == 1 && alive[opt->kill_rank] &&
            atomic_load(&sh->kill_ns)) /* --kill-signal STOP: the others are done */
            kill(pids[opt->kill_rank], SIGKILL);
        if (!killed && failed && !fault && now_s() > grace_end) {
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
            timed_out = !failed || fault;
        }
        usleep(2000);
    }
    if (timed_out)
        return EMU_EXIT_TIMEOUT;
    return failed ? EMU_EXIT_FAIL : EMU_EXIT_OK;
}

/* After the forks: the unique id for the ranks (the emulated NCCL starts its root thread here). */
static int publish_id(struct emu_shared *sh)
{
    ncclResult_t nrc = ncclGetUniqueId(&sh->id);

    if (nrc != ncclSuccess) {
        fprintf(stderr, "prophet-emu: ncclGetUniqueId failed: %s\n", ncclGetErrorString(nrc));
        atomic_store(&sh->id_state, -1);
        return -1;
    }
    atomic_store(&sh->id_state, 1);
    return 0;
}

int emu_launch(const struct emu_options *opt, const struct emu_profile *prof, struct emu_shared *sh)
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
            int code = emu_rank_main(opt, prof, sh, r);
            emuProcDump(); /* EMU_CUDA_PROC_DUMP: _exit skips the driver's atexit dump */
            fflush(NULL);
            _exit(code);
        }
        pids[r] = pid;
        alive[r] = 1;
    }
    publish_id(sh); /* on failure the ranks exit 1 */
    return wait_all(opt, sh, pids, alive);
}
