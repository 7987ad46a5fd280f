/* Several communicators at once: every rank process makes C communicators and drives each from
 * its own thread (own stream, own buffers), all concurrently issuing all-reduces under the
 * preload; every result is checked exactly.
 *   fault_threads NRANKS NCOMMS ITERS [held]
 * held: a communicator on which the preload never held an all-reduce fails the run. */
#include <pthread.h>
#include <string.h>

#include "fault_cluster.h"

#define K 6
#define BASE_COUNT 777

struct worker {
    int rank, nranks, c, iters;
    struct emu_held_count held;
    CUcontext ctx;
    ncclComm_t comm;
    int rc;
};

static size_t count_of(int c, int k)
{
    return BASE_COUNT + (size_t)k * 61 + (size_t)c * 13;
}

static int drive(struct worker *w)
{
    CUstream s;
    CUdeviceptr buf[K];
    float *h = malloc(count_of(w->c, K) * sizeof(float));
    int key;

    if (!h)
        return 1;
    FAULT_CU(w->rank, cuCtxSetCurrent(w->ctx));
    FAULT_CU(w->rank, cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    for (int k = 0; k < K; k++)
        FAULT_CU(w->rank, cuMemAlloc(&buf[k], count_of(w->c, k) * sizeof(float)));
    for (int it = 0; it < w->iters; it++) {
        for (int k = 0; k < K; k++) {
            key = w->c * 100 + k; /* distinct data per communicator */
            if (fault_fill(w->rank, key, it, buf[k], h, count_of(w->c, k)))
                return 1;
            FAULT_NCCL(w->rank, ncclAllReduce((void *)buf[k], (void *)buf[k], count_of(w->c, k),
                                              ncclFloat32, ncclSum, w->comm, s));
            emu_held_note(&w->held);
        }
        FAULT_CU(w->rank, cuStreamSynchronize(s));
        for (int k = 0; k < K; k++)
            if (fault_check(w->rank, w->nranks, w->c * 100 + k, it, buf[k], h, count_of(w->c, k)))
                return 1;
    }
    for (int k = 0; k < K; k++)
        cuMemFree(buf[k]);
    cuStreamDestroy(s);
    free(h);
    return 0;
}

static void *worker_main(void *p)
{
    struct worker *w = p;

    w->rc = drive(w);
    return NULL;
}

struct params {
    int ncomms, iters, need_held;
};

static int rank_main(int rank, int nranks, const ncclUniqueId *ids, void *arg)
{
    const struct params *p = arg;
    struct worker w[FAULT_MAX_IDS];
    pthread_t th[FAULT_MAX_IDS];
    CUcontext ctx;
    int bad = 0;

    if (fault_cuda_setup(rank, &ctx, NULL))
        return 1;
    for (int c = 0; c < p->ncomms; c++) {
        w[c] =
            (struct worker){.rank = rank, .nranks = nranks, .c = c, .iters = p->iters, .ctx = ctx};
        FAULT_NCCL(rank, ncclCommInitRank(&w[c].comm, nranks, ids[c], rank));
        w[c].held.comm = w[c].comm;
    }
    for (int c = 0; c < p->ncomms; c++)
        if (pthread_create(&th[c], NULL, worker_main, &w[c]))
            return 1;
    for (int c = 0; c < p->ncomms; c++) {
        pthread_join(th[c], NULL);
        bad |= w[c].rc;
        printf("fault: rank %d: comm %d: at most %lld all-reduce(s) held by the preload at once\n",
               rank, c, w[c].held.max);
        if (p->need_held && w[c].held.max <= 0) {
            fprintf(stderr, "fault: rank %d: comm %d: nothing was ever held\n", rank, c);
            bad = 1;
        }
    }
    for (int c = 0; c < p->ncomms; c++)
        FAULT_NCCL(rank, ncclCommDestroy(w[c].comm));
    if (!bad)
        printf("fault: rank %d: %d communicators x %d iterations x %d calls exact\n", rank,
               p->ncomms, p->iters, K);
    return bad;
}

int main(int argc, char **argv)
{
    struct params p;
    int n;

    p.need_held = argc == 5 && !strcmp(argv[4], "held");
    if (argc < 4 || argc > 5 || (argc == 5 && !p.need_held) || (n = atoi(argv[1])) < 2 || n > 16 ||
        (p.ncomms = atoi(argv[2])) < 1 || p.ncomms > FAULT_MAX_IDS ||
        (p.iters = atoi(argv[3])) < 1) {
        fprintf(stderr, "usage: fault_threads NRANKS(2..16) NCOMMS(1..%d) ITERS [held]\n",
                FAULT_MAX_IDS);
        return 2;
    }
    return fault_run_ranks(n, p.ncomms, 120.0, rank_main, &p);
}
