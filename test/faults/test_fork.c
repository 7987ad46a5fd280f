/* fork() after initialisation: each rank initialises CUDA and NCCL under the preload, runs
 * iterations of K all-reduces of different sizes (a K-call iteration to learn), then forks twice in
 * the middle of iteration FORK_AT, after holding started (nothing is held before the learned
 * iteration survived 16 iteration starts, preload/engine/schedule.c):
 * one child does plain work (malloc, stdio, ncclGetVersion through the preload) and exits through
 * exit() so that atexit handlers run; the other execs /bin/sh -c 'exit 7'. Neither may crash or
 * hang (bounded wait); the parent finishes the iteration and runs more, all exact.
 *   fault_fork NRANKS [held]   held: a rank fails when no all-reduce was held at its fork */
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fault_cluster.h"

#define K 6
#define ITERS 40
#define FORK_AT 30
#define COUNT 2048 /* the largest; call k all-reduces COUNT - 256 * k elements */

static size_t count_of(int k)
{
    return COUNT - (size_t)k * 256;
}

static int in_child;

/* LeakSanitizer hook: a child forked from a multi-threaded process has lost the other threads'
 * stacks, so everything they pointed to looks leaked; leak checking is meaningless there. */
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void)
{
    return in_child;
}

static int plain_child(void)
{
    char line[64];
    int v = 0;
    size_t total = 0;

    for (int i = 0; i < 200; i++) {
        char *p = malloc(64 + (size_t)i * 8);
        if (!p)
            return 3;
        snprintf(p, 64, "%d", i);
        total += strlen(p);
        free(p);
    }
    if (ncclGetVersion(&v) != ncclSuccess || v <= 0)
        return 4;
    snprintf(line, sizeof(line), "%zu %d", total, v);
    return line[0] ? 0 : 5;
}

/* Waits up to 10 s for pid; returns its status, or -1 after killing it. */
static int wait_bounded(pid_t pid, int rank, const char *what)
{
    double end = fault_now_s() + 10.0;
    int status;

    while (fault_now_s() < end) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid)
            return status;
        usleep(2000);
    }
    fprintf(stderr, "fault: rank %d: %s child HUNG (10 s); killed\n", rank, what);
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
}

static int fork_children(int rank)
{
    pid_t a, b;
    int st;

    fflush(NULL);
    a = fork();
    if (a < 0)
        return 1;
    if (a == 0) {
        in_child = 1;
        exit(plain_child());
    }
    b = fork();
    if (b < 0)
        return 1;
    if (b == 0) {
        execl("/bin/sh", "sh", "-c", "exit 7", (char *)NULL);
        _exit(127);
    }
    st = wait_bounded(a, rank, "plain");
    if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "fault: rank %d: plain child failed (status 0x%x)\n", rank, st);
        return 1;
    }
    st = wait_bounded(b, rank, "exec");
    if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 7) {
        fprintf(stderr, "fault: rank %d: exec child failed (status 0x%x)\n", rank, st);
        return 1;
    }
    return 0;
}

static int rank_main(int rank, int nranks, const ncclUniqueId *ids, void *arg)
{
    const int *need_held = arg;
    struct emu_held_count held = {0};
    long long at_fork = 0;
    CUcontext ctx;
    CUstream s;
    ncclComm_t comm;
    CUdeviceptr buf[K];
    static float h[COUNT];

    if (fault_cuda_setup(rank, &ctx, &s))
        return 1;
    for (int k = 0; k < K; k++)
        FAULT_CU(rank, cuMemAlloc(&buf[k], COUNT * sizeof(float)));
    FAULT_NCCL(rank, ncclCommInitRank(&comm, nranks, ids[0], rank));
    held.comm = comm;
    for (int it = 0; it < ITERS; it++) {
        for (int k = 0; k < K; k++) {
            if (fault_fill(rank, k, it, buf[k], h, count_of(k)))
                return 1;
            FAULT_NCCL(rank, ncclAllReduce((void *)buf[k], (void *)buf[k], count_of(k), ncclFloat32,
                                           ncclSum, comm, s));
            emu_held_note(&held);
            if (it == FORK_AT && k == K / 2) {
                at_fork = emu_held_now(&held);
                printf("fault: rank %d: forking in iteration %d after call %d: %lld all-reduce(s) "
                       "held by the preload\n",
                       rank, it, k, at_fork);
                fflush(stdout);
                if (*need_held && at_fork <= 0) {
                    fprintf(stderr, "fault: rank %d: nothing held at the fork: nothing to test\n",
                            rank);
                    return 1;
                }
                if (fork_children(rank))
                    return 1;
            }
        }
        FAULT_CU(rank, cuStreamSynchronize(s));
        for (int k = 0; k < K; k++)
            if (fault_check(rank, nranks, k, it, buf[k], h, count_of(k)))
                return 1;
    }
    FAULT_NCCL(rank, ncclCommDestroy(comm));
    printf("fault: rank %d: forked in iteration %d with %lld held; children fine; %d iterations "
           "exact\n",
           rank, FORK_AT, at_fork, ITERS);
    for (int k = 0; k < K; k++)
        cuMemFree(buf[k]);
    cuStreamDestroy(s);
    return 0;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 2;
    int need_held = argc > 2 && !strcmp(argv[2], "held");

    if (n < 2 || n > 16 || (argc > 2 && !need_held)) {
        fprintf(stderr, "usage: fault_fork [NRANKS 2..16] [held]\n");
        return 2;
    }
    return fault_run_ranks(n, 1, 60.0, rank_main, &need_held);
}
