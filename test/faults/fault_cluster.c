/* Rank processes for the fault tests; see fault_cluster.h. */
#include "fault_cluster.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct fault_shared {
    _Atomic int state; /* 0 = ids not yet made, 1 = valid, -1 = failed */
    ncclUniqueId ids[FAULT_MAX_IDS];
};

double fault_now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int child_main(struct fault_shared *sh, int rank, int nranks, fault_rank_fn fn, void *arg)
{
    int st;

    while ((st = atomic_load(&sh->state)) == 0)
        usleep(500);
    if (st != 1)
        return 1;
    return fn(rank, nranks, sh->ids, arg);
}

static int make_ids(struct fault_shared *sh, int nids)
{
    for (int i = 0; i < nids; i++) {
        ncclResult_t rc = ncclGetUniqueId(&sh->ids[i]);
        if (rc != ncclSuccess) {
            fprintf(stderr, "fault: ncclGetUniqueId failed: %s\n", ncclGetErrorString(rc));
            atomic_store(&sh->state, -1);
            return -1;
        }
    }
    atomic_store(&sh->state, 1);
    return 0;
}

/* Waits for every child; kills the ones left after the deadline. Returns the number that failed. */
static int wait_children(const pid_t *pids, int n, double deadline)
{
    int left = n, failed = 0, alive[64];

    for (int r = 0; r < n; r++)
        alive[r] = 1;
    while (left > 0) {
        int status;
        pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid > 0) {
            for (int r = 0; r < n; r++) {
                if (pids[r] != pid)
                    continue;
                alive[r] = 0;
                left--;
                if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
                    break;
                failed++;
                if (WIFSIGNALED(status))
                    fprintf(stderr, "fault: rank %d killed by signal %d\n", r, WTERMSIG(status));
                else
                    fprintf(stderr, "fault: rank %d exited %d\n", r, WEXITSTATUS(status));
            }
            continue;
        }
        if (pid < 0 && errno != EINTR)
            break;
        if (fault_now_s() > deadline) {
            for (int r = 0; r < n; r++)
                if (alive[r]) {
                    fprintf(stderr, "fault: rank %d HUNG: still running at the deadline; killed\n",
                            r);
                    kill(pids[r], SIGKILL);
                }
            deadline = 1e300;
        }
        usleep(2000);
    }
    return failed;
}

int fault_run_ranks(int nranks, int nids, double timeout_s, fault_rank_fn fn, void *arg)
{
    struct fault_shared *sh;
    pid_t pids[64];
    int failed;

    if (nranks < 1 || nranks > 64 || nids < 1 || nids > FAULT_MAX_IDS)
        return 1;
    sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) {
        perror("fault: mmap");
        return 1;
    }
    memset(sh, 0, sizeof(*sh));
    fflush(NULL);
    for (int r = 0; r < nranks; r++) {
        pids[r] = fork();
        if (pids[r] < 0) {
            perror("fault: fork");
            atomic_store(&sh->state, -1);
            nranks = r;
            break;
        }
        if (pids[r] == 0) {
            int code = child_main(sh, r, nranks, fn, arg);
            fflush(NULL);
            exit(code); /* exit, not _exit: the preload's exit handler runs as in a real job */
        }
    }
    if (atomic_load(&sh->state) == 0)
        make_ids(sh, nids);
    failed = wait_children(pids, nranks, fault_now_s() + timeout_s);
    munmap(sh, sizeof(*sh));
    return failed ? 1 : 0;
}

int fault_cuda_setup(int rank, CUcontext *ctx, CUstream *s)
{
    CUdevice dev;

    FAULT_CU(rank, cuInit(0));
    FAULT_CU(rank, cuDeviceGet(&dev, 0));
    FAULT_CU(rank, cuDevicePrimaryCtxRetain(ctx, dev));
    FAULT_CU(rank, cuCtxSetCurrent(*ctx));
    if (s)
        FAULT_CU(rank, cuStreamCreate(s, CU_STREAM_NON_BLOCKING));
    return 0;
}

int fault_fill(int rank, int k, int iter, CUdeviceptr d, float *h, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h[i] = fault_value(rank, k, iter, i);
    FAULT_CU(rank, cuMemcpyHtoD(d, h, n * sizeof(float)));
    return 0;
}

size_t fault_check(int rank, int nranks, int k, int iter, CUdeviceptr d, float *h, size_t n)
{
    size_t wrong = 0;

    if (cuMemcpyDtoH(h, d, n * sizeof(float)) != CUDA_SUCCESS)
        return n;
    for (size_t i = 0; i < n; i++) {
        float want = fault_sum(nranks, k, iter, i);
        if (h[i] != want && !wrong++)
            fprintf(stderr,
                    "fault: rank %d: wrong result: iteration %d buffer %d element %zu: expected "
                    "%g, got %g\n",
                    rank, iter, k, i, (double)want, (double)h[i]);
    }
    return wrong;
}

size_t fault_unreduced(int rank, int k, int iter, CUdeviceptr d, float *h, size_t n)
{
    size_t same = 0;

    if (cuMemcpyDtoH(h, d, n * sizeof(float)) != CUDA_SUCCESS)
        return 0;
    for (size_t i = 0; i < n; i++)
        same += h[i] == fault_value(rank, k, iter, i);
    return same;
}
