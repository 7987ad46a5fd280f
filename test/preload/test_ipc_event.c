/* An adversarial consumer in another process (docs/completion-holding.md, "Interprocess events";
 * issue 37, item 1): what PyTorch's CUDA tensor sharing does right after all_reduce(t) +
 * work.wait(). Two ranks run ITERS iterations of K in-place all-reduces on one stream, under a
 * one-block-per-iteration plan, so that from about iteration 26 on the iteration's first call is
 * held when it returns. Right after that first call, every iteration, each rank
 *   creates an event with CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING, records it on the
 *   stream, gets its handle (cuIpcGetEventHandle, after the record, as PyTorch does) and hands it
 *   to its consumer, a second process (fork + exec of this program) that mapped the first
 *   buffer once (cuIpcGetMemHandle / cuIpcOpenMemHandle);
 * the consumer opens the event and waits on it, in turn by cuStreamWaitEvent + an async copy on
 * its own stream, by cuEventSynchronize, and by polling cuEventQuery, then compares every element
 * of the buffer with the all-reduced sum, exactly, and answers with the count of wrong ones. The
 * rank waits for that answer (10 s at most: a consumer that waits for ever is a failure too)
 * before its next call, then checks the iteration's K results itself.
 *   preload-ipc-event wrapped     the event is made through cuEventCreate (the preload sees the
 *                                 flag: the record must be real)
 *   preload-ipc-event unwrapped   cuEventCreate comes unwrapped from cuGetProcAddress (with
 *                                 EMU_CUDA_PROC_UNNAMED=cuEventCreate and a CUDA version the
 *                                 preload does not know), so the record may be virtual:
 *                                 cuIpcGetEventHandle must make it real
 * Prints "rank R: ipc MODE: N handoffs, H of them behind a held all-reduce, W wrong" and exits 0
 * when no element was wrong, every consumer answered and H > 0 on each rank ("nothing held"
 * otherwise: the test would prove nothing). Sets EMU_CUDA_IPC_MEM=1 (the emulated driver shares
 * device memory then). */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include "emu_nccl_hooks.h"
#include "pt_common.h"

#define K 6
#define ITERS 40
#define SHARED 3 /* the event is recorded after call SHARED - 1; buffers 0..SHARED-1 are shared */

static int unwrapped;

static size_t count_of(int k)
{
    return 1024 + (size_t)k * 160;
}

static float value_of(int r, int k, int it)
{
    return (float)((r + 1) * (k + 3) + it % 5);
}

static float sum_of(int nranks, int k, int it)
{
    float s = 0;
    for (int r = 0; r < nranks; r++)
        s += value_of(r, k, it);
    return s;
}

/* rank -> consumer */
struct handoff {
    char what; /* 'M': the buffers' handles; 'E': an event to wait on; 'Q': quit */
    int way;   /* 0: cuStreamWaitEvent, 1: cuEventSynchronize, 2: cuEventQuery polled */
    int it;    /* the iteration: buffer k must hold sum_of(nranks, k, it) */
    int nranks;
    CUipcMemHandle mem[SHARED];
    CUipcEventHandle ev;
};

/* ---- the consumer process ------------------------------------------------------------------- */

#define C_CU(call)                                                                                 \
    do {                                                                                           \
        CUresult c_rc = (call);                                                                    \
        if (c_rc != CUDA_SUCCESS) {                                                                \
            fprintf(stderr, "FAIL consumer: %s = %d\n", #call, (int)c_rc);                         \
            return -1;                                                                             \
        }                                                                                          \
    } while (0)

/* The count of wrong elements after waiting on the opened event as h->way says; -1 on error. */
static long consume(const struct handoff *h, const CUdeviceptr *buf, CUstream cs, float **host)
{
    CUevent ev;
    long wrong = 0;

    C_CU(cuIpcOpenEventHandle(&ev, h->ev));
    if (h->way == 0) {
        C_CU(cuStreamWaitEvent(cs, ev, 0));
        for (int k = 0; k < SHARED; k++)
            C_CU(cuMemcpyDtoHAsync(host[k], buf[k], count_of(k) * sizeof(float), cs));
        C_CU(cuStreamSynchronize(cs));
    } else {
        if (h->way == 1) {
            C_CU(cuEventSynchronize(ev));
        } else {
            CUresult q;
            while ((q = cuEventQuery(ev)) == CUDA_ERROR_NOT_READY)
                usleep(50);
            C_CU(q);
        }
        for (int k = 0; k < SHARED; k++)
            C_CU(cuMemcpyDtoH(host[k], buf[k], count_of(k) * sizeof(float)));
    }
    for (int k = 0; k < SHARED; k++)
        for (size_t i = 0; i < count_of(k); i++)
            wrong += host[k][i] != sum_of(h->nranks, k, h->it);
    C_CU(cuEventDestroy(ev));
    return wrong;
}

static int consumer(int rfd, int wfd)
{
    CUcontext ctx;
    CUdevice dev;
    CUstream cs;
    CUdeviceptr buf[SHARED] = {0};
    struct handoff h;
    float *host[SHARED];

    for (int k = 0; k < SHARED; k++)
        if (!(host[k] = malloc(count_of(k) * sizeof(float))))
            return 1;

    C_CU(cuInit(0));
    C_CU(cuDeviceGet(&dev, 0));
    C_CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    C_CU(cuCtxSetCurrent(ctx));
    C_CU(cuStreamCreate(&cs, CU_STREAM_NON_BLOCKING));
    while (read(rfd, &h, sizeof(h)) == (ssize_t)sizeof(h) && h.what != 'Q') {
        long wrong = 0;
        if (h.what == 'M')
            for (int k = 0; k < SHARED; k++)
                C_CU(cuIpcOpenMemHandle(&buf[k], h.mem[k], CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
        else
            wrong = consume(&h, buf, cs, host);
        if (write(wfd, &wrong, sizeof(wrong)) != (ssize_t)sizeof(wrong))
            return 1;
    }
    for (int k = 0; k < SHARED; k++) {
        C_CU(cuIpcCloseMemHandle(buf[k]));
        free(host[k]);
    }
    C_CU(cuStreamDestroy(cs));
    return 0;
}

/* ---- a rank --------------------------------------------------------------------------------- */

struct peer {
    pid_t pid;
    int wfd, rfd;
};

static int peer_start(struct peer *p)
{
    int down[2], up[2];

    if (pipe(down) != 0 || pipe(up) != 0)
        return -1;
    fflush(NULL);
    if ((p->pid = fork()) < 0)
        return -1;
    if (p->pid == 0) {
        char r[16], w[16];
        close(down[1]);
        close(up[0]);
        snprintf(r, sizeof(r), "%d", down[0]);
        snprintf(w, sizeof(w), "%d", up[1]);
        execl("/proc/self/exe", "preload-ipc-event", "consumer", r, w, (char *)NULL);
        _exit(127);
    }
    close(down[0]);
    close(up[1]);
    p->wfd = down[1];
    p->rfd = up[0];
    return 0;
}

/* Sends h and waits up to 10 s for the answer: the wrong count, or -1 (error, no answer). */
static long peer_ask(struct peer *p, const struct handoff *h, int rank)
{
    struct pollfd pf = {.fd = p->rfd, .events = POLLIN};
    long wrong = -1;
    int n;

    if (write(p->wfd, h, sizeof(*h)) != (ssize_t)sizeof(*h))
        return -1;
    while ((n = poll(&pf, 1, 10000)) < 0 && errno == EINTR)
        ;
    if (n == 0) {
        fprintf(stderr,
                "FAIL rank %d: the consumer did not answer in 10 s (it waits on the event "
                "for ever)\n",
                rank);
        return -1;
    }
    if (read(p->rfd, &wrong, sizeof(wrong)) != (ssize_t)sizeof(wrong))
        return -1;
    return wrong;
}

typedef CUresult (*event_create_fn)(CUevent *, unsigned int);

static event_create_fn event_create(void)
{
    void *fn = NULL;

    if (!unwrapped)
        return cuEventCreate;
    /* a version newer than the preload's cuda.h: it hands the driver's answer out unwrapped */
    PT_CU(cuGetProcAddress("cuEventCreate", &fn, 99000, CU_GET_PROC_ADDRESS_DEFAULT, NULL));
    return (event_create_fn)fn;
}

static int rank_main(int rank, int nranks, const ncclUniqueId *id)
{
    CUcontext ctx;
    ncclComm_t comm;
    CUstream s;
    CUdeviceptr buf[K];
    struct peer peer;
    struct emu_held_count held;
    struct handoff h;
    long handoffs = 0, behind_held = 0, wrong = 0, failed = 0;
    float *host = malloc(count_of(K) * sizeof(float));

    if (peer_start(&peer) != 0) {
        fprintf(stderr, "FAIL rank %d: no consumer process\n", rank);
        return 1;
    }
    pt_rank_setup(rank, nranks, id, &ctx, &comm);
    event_create_fn create = event_create();
    PT_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    for (int k = 0; k < K; k++)
        PT_CU(cuMemAlloc(&buf[k], count_of(k) * sizeof(float)));
    memset(&held, 0, sizeof(held));
    held.comm = comm;
    memset(&h, 0, sizeof(h));
    h.what = 'M';
    for (int k = 0; k < SHARED; k++) /* before any work on them (the emulator's rule) */
        PT_CU(cuIpcGetMemHandle(&h.mem[k], buf[k]));
    if (peer_ask(&peer, &h, rank) != 0)
        return 1;
    for (int it = 0; it < ITERS && !failed; it++) {
        for (int k = 0; k < K; k++) {
            uint32_t bits;
            float v = value_of(rank, k, it);
            memcpy(&bits, &v, sizeof(bits));
            PT_CU(cuMemsetD32Async(buf[k], bits, count_of(k), s));
        }
        for (int k = 0; k < K; k++) {
            PT_NCCL(ncclAllReduce((void *)buf[k], (void *)buf[k], count_of(k), ncclFloat32, ncclSum,
                                  comm, s));
            emu_held_note(&held);
            if (k != SHARED - 1)
                continue;
            /* torch.multiprocessing shares the results: an interprocess event on the stream */
            CUevent ev;
            long long held_now = emu_held_now(&held);
            long w;
            PT_CU(create(&ev, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING));
            PT_CU(cuEventRecord(ev, s));
            memset(&h, 0, sizeof(h));
            h.what = 'E';
            h.way = it % 3;
            h.it = it;
            h.nranks = nranks;
            PT_CU(cuIpcGetEventHandle(&h.ev, ev));
            handoffs++;
            behind_held += held_now > 0;
            if ((w = peer_ask(&peer, &h, rank)) != 0) {
                const char *how = h.way == 0   ? "cuStreamWaitEvent"
                                  : h.way == 1 ? "cuEventSynchronize"
                                               : "cuEventQuery";
                if (w < 0)
                    fprintf(stderr, "FAIL rank %d: iteration %d: the consumer (%s) failed\n", rank,
                            it, how);
                else
                    fprintf(stderr,
                            "FAIL rank %d: iteration %d: the consumer (%s) read %ld wrong "
                            "element(s) (%lld all-reduce(s) held at the record)\n",
                            rank, it, how, w, held_now);
                wrong += w < 0 ? 1 : w;
                failed = w < 0;
            }
            PT_CU(cuEventDestroy(ev));
        }
        PT_CU(cuStreamSynchronize(s));
        for (int k = 0; k < K; k++) {
            PT_CU(cuMemcpyDtoH(host, buf[k], count_of(k) * sizeof(float)));
            for (size_t i = 0; i < count_of(k); i++)
                if (host[i] != sum_of(nranks, k, it)) {
                    fprintf(stderr, "FAIL rank %d: iteration %d call %d: %g, expected %g\n", rank,
                            it, k, (double)host[i], (double)sum_of(nranks, k, it));
                    wrong++;
                    break;
                }
        }
    }
    h.what = 'Q';
    if (write(peer.wfd, &h, sizeof(h)) != (ssize_t)sizeof(h))
        failed = 1;
    int st = 0;
    if (waitpid(peer.pid, &st, 0) != peer.pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "FAIL rank %d: the consumer process failed\n", rank);
        failed = 1;
    }
    printf("rank %d: ipc %s: %ld handoffs, %ld of them behind a held all-reduce, %ld wrong\n", rank,
           unwrapped ? "unwrapped" : "wrapped", handoffs, behind_held, wrong);
    fflush(stdout);
    PT_NCCL(ncclCommDestroy(comm));
    free(host);
    if (behind_held == 0)
        fprintf(stderr, "FAIL rank %d: nothing held at a record: nothing tested\n", rank);
    return wrong != 0 || failed || behind_held == 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "consumer"))
        return consumer(atoi(argv[2]), atoi(argv[3]));
    if (argc != 2 || (strcmp(argv[1], "wrapped") && strcmp(argv[1], "unwrapped"))) {
        fprintf(stderr, "usage: %s wrapped|unwrapped\n", argv[0]);
        return 2;
    }
    unwrapped = !strcmp(argv[1], "unwrapped");
    setenv("EMU_CUDA_IPC_MEM", "1", 1); /* the emulated driver's shareable device memory */
    return pt_run_ranks(2, rank_main);
}
