/* Horovod: the backward thread enqueues each gradient with a readiness event; a background
 * thread per rank runs a cycle every --cycle-ms. Rank 0's thread is the coordinator: it takes the
 * tensors that every rank has seen ready (published through shared memory, as Horovod does over
 * its controller) and appends fused responses, in order, up to the fusion threshold. Every rank's
 * thread executes the responses in order on its Horovod stream: copy into the fusion buffer, one
 * ncclAllReduce, copy out (a single tensor is all-reduced in place). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "gpu.h"
#include "rank.h"

struct hvd {
    CUstream stream;
    CUevent *ready;   /* per gradient, recorded on the compute stream */
    CUevent *done[2]; /* per iteration parity and gradient, on the Horovod stream once the
                       * result is in place */
    CUdeviceptr fusion;
    uint64_t threshold;
    uint64_t cycle_ns;
    uint64_t total; /* total_iters * ngrad */

    pthread_t thread;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t enqueued; /* seq < enqueued have their ready event recorded (under mu) */
    uint64_t issued;   /* seq < issued have their done event recorded (under mu) */
    int stop;          /* under mu */
    int failed;        /* under mu */

    /* background thread only */
    uint64_t observed;  /* seq < observed: ready event fired */
    uint64_t planned;   /* rank 0: seq < planned are covered by responses */
    uint64_t next_resp; /* next response to execute */
};

static uint64_t seq_of(const struct emu_rank *r, int iter, size_t g)
{
    return (uint64_t)iter * r->ngrad + g;
}

static int oom(struct emu_rank *r)
{
    fprintf(stderr, "prophet-emu: rank %d: out of memory\n", r->rank);
    return -1;
}

/* ---- background thread ------------------------------------------------------------------- */

/* Advances m->observed over the ready events that have fired. */
static int observe_ready(struct emu_rank *r, struct hvd *m)
{
    uint64_t enq;

    pthread_mutex_lock(&m->mu);
    enq = m->enqueued;
    pthread_mutex_unlock(&m->mu);
    while (m->observed < enq) {
        CUresult rc = emu_gpu->event_query(m->ready[m->observed % r->ngrad]);
        if (rc == CUDA_ERROR_NOT_READY)
            break;
        if (emu_cu(r, rc, "cuEventQuery"))
            return -1;
        m->observed++;
    }
    atomic_store(&r->sh->hvd.ready[r->rank], m->observed);
    return 0;
}

/* Rank 0: appends responses for the tensors that every rank has seen ready. */
static void coordinate(struct emu_rank *r, struct hvd *m)
{
    struct emu_hvd_ctl *c = &r->sh->hvd;
    uint64_t common = UINT64_MAX, oldest = UINT64_MAX, n = atomic_load(&c->nresp);

    for (int k = 0; k < r->nranks; k++) {
        uint64_t v = atomic_load(&c->ready[k]), u = atomic_load(&c->consumed[k]);
        common = v < common ? v : common;
        oldest = u < oldest ? u : oldest;
    }
    while (m->planned < common && n - oldest < EMU_HVD_RING) {
        uint64_t first = m->planned, end = first + 1;
        uint64_t iter_end = (first / r->ngrad + 1) * r->ngrad;
        uint64_t bytes = emu_grad_bytes(r, first % r->ngrad);
        if (bytes <= m->threshold)
            while (end < common && end < iter_end &&
                   bytes + emu_grad_bytes(r, end % r->ngrad) <= m->threshold)
                bytes += emu_grad_bytes(r, end++ % r->ngrad);
        c->resp[n % EMU_HVD_RING] = (struct emu_hvd_resp){first, end};
        atomic_store_explicit(&c->nresp, ++n, memory_order_release);
        m->planned = end;
    }
}

/* Copies in, all-reduces, copies out one response; records each member's done event. */
static int execute(struct emu_rank *r, struct hvd *m, const struct emu_hvd_resp *resp)
{
    int iter = (int)(resp->first / r->ngrad);
    uint64_t off = 0;

    for (uint64_t s = resp->first; s < resp->end; s++)
        if (emu_cu(r, emu_gpu->stream_wait_event(m->stream, m->ready[s % r->ngrad]),
                   "cuStreamWaitEvent"))
            return -1;
    if (resp->end - resp->first == 1) {
        size_t g = resp->first % r->ngrad;
        if (emu_allreduce(r, iter, r->grad[g], r->grad[g], r->count[g], m->stream))
            return -1;
    } else {
        for (uint64_t s = resp->first; s < resp->end; s++) {
            size_t g = s % r->ngrad;
            if (emu_cu(r,
                       emu_gpu->copy_async(m->fusion + off, r->grad[g], emu_grad_bytes(r, g),
                                           m->stream),
                       "cuMemcpyDtoDAsync (into fusion buffer)"))
                return -1;
            off += emu_grad_bytes(r, g);
        }
        if (emu_allreduce(r, iter, m->fusion, m->fusion, off / sizeof(float), m->stream))
            return -1;
        off = 0;
        for (uint64_t s = resp->first; s < resp->end; s++) {
            size_t g = s % r->ngrad;
            if (emu_cu(r,
                       emu_gpu->copy_async(r->grad[g], m->fusion + off, emu_grad_bytes(r, g),
                                           m->stream),
                       "cuMemcpyDtoDAsync (out of fusion buffer)"))
                return -1;
            off += emu_grad_bytes(r, g);
        }
    }
    for (uint64_t s = resp->first; s < resp->end; s++)
        if (emu_cu(r, emu_gpu->event_record(m->done[emu_parity(iter)][s % r->ngrad], m->stream),
                   "cuEventRecord"))
            return -1;
    pthread_mutex_lock(&m->mu);
    m->issued = resp->end;
    pthread_cond_broadcast(&m->cv);
    pthread_mutex_unlock(&m->mu);
    return 0;
}

static int execute_responses(struct emu_rank *r, struct hvd *m)
{
    struct emu_hvd_ctl *c = &r->sh->hvd;
    uint64_t n = atomic_load_explicit(&c->nresp, memory_order_acquire);

    while (m->next_resp < n) {
        struct emu_hvd_resp resp = c->resp[m->next_resp % EMU_HVD_RING];
        if (resp.first != m->issued) {
            fprintf(stderr,
                    "prophet-emu: rank %d: Horovod response %llu starts at %llu, "
                    "expected %llu\n",
                    r->rank, (unsigned long long)m->next_resp, (unsigned long long)resp.first,
                    (unsigned long long)m->issued);
            return -1;
        }
        if (execute(r, m, &resp))
            return -1;
        atomic_store(&c->consumed[r->rank], ++m->next_resp);
    }
    return 0;
}

static void next_tick(struct timespec *t, uint64_t ns)
{
    struct timespec now;
    uint64_t tns = (uint64_t)t->tv_sec * 1000000000ull + (uint64_t)t->tv_nsec + ns;
    uint64_t nowns;

    clock_gettime(CLOCK_MONOTONIC, &now);
    nowns = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
    if (tns < nowns) /* late: the cycle restarts from now, like a sleep after the work */
        tns = nowns + ns;
    t->tv_sec = (time_t)(tns / 1000000000ull);
    t->tv_nsec = (long)(tns % 1000000000ull);
}

static int cycle(struct emu_rank *r, struct hvd *m)
{
    /* like Horovod's and PyTorch's watchdogs: a failed collective stops the background loop */
    if (emu_async_error(r) || observe_ready(r, m))
        return -1;
    if (r->rank == 0)
        coordinate(r, m);
    return execute_responses(r, m);
}

static void *background(void *arg)
{
    struct emu_rank *r = arg;
    struct hvd *m = r->mode;
    struct timespec t;
    int stop = 0, err = emu_cu(r, emu_gpu->set_device(r->device), "set device (Horovod thread)");

    clock_gettime(CLOCK_MONOTONIC, &t);
    while (!err && !stop) {
        next_tick(&t, m->cycle_ns);
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) == EINTR)
            ;
        err = cycle(r, m);
        pthread_mutex_lock(&m->mu);
        stop = m->stop || m->issued == m->total;
        pthread_mutex_unlock(&m->mu);
    }
    if (err) {
        pthread_mutex_lock(&m->mu);
        m->failed = 1;
        pthread_cond_broadcast(&m->cv);
        pthread_mutex_unlock(&m->mu);
    }
    return NULL;
}

/* ---- main thread ------------------------------------------------------------------------- */

/* The host blocks until every seq < want has been issued by the background thread. */
static int wait_issued(struct emu_rank *r, struct hvd *m, uint64_t want)
{
    int failed;

    pthread_mutex_lock(&m->mu);
    while (m->issued < want && !m->failed)
        pthread_cond_wait(&m->cv, &m->mu);
    failed = m->failed;
    pthread_mutex_unlock(&m->mu);
    if (failed)
        fprintf(stderr, "prophet-emu: rank %d: the Horovod background thread failed\n", r->rank);
    return failed ? -1 : 0;
}

static int hvd_init(struct emu_rank *r)
{
    struct hvd *m = calloc(1, sizeof(*m));
    uint64_t all = 0;

    r->mode = m;
    if (!m || !(m->ready = calloc(r->ngrad, sizeof(CUevent))) ||
        !(m->done[0] = calloc(r->ngrad, sizeof(CUevent))) ||
        !(m->done[1] = calloc(r->ngrad, sizeof(CUevent))))
        return oom(r);
    pthread_mutex_init(&m->mu, NULL);
    pthread_cond_init(&m->cv, NULL);
    m->threshold = emu_threshold_bytes(r, r->opt->fusion_mb);
    m->cycle_ns = (uint64_t)(r->opt->cycle_ms * 1e6 * r->opt->scale);
    if (m->cycle_ns < 1000)
        m->cycle_ns = 1000;
    m->total = (uint64_t)r->total_iters * r->ngrad;
    for (size_t g = 0; g < r->ngrad; g++)
        all += emu_grad_bytes(r, g);
    if (emu_cu(r, emu_gpu->stream_create(&m->stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate") ||
        emu_cu(r, emu_gpu->mem_alloc(&m->fusion, m->threshold < all ? m->threshold : all),
               "cuMemAlloc"))
        return -1;
    for (size_t g = 0; g < r->ngrad; g++)
        if (emu_cu(r, emu_gpu->event_create(&m->ready[g], CU_EVENT_DISABLE_TIMING),
                   "cuEventCreate") ||
            emu_cu(r, emu_gpu->event_create(&m->done[0][g], 0), "cuEventCreate") ||
            emu_cu(r, emu_gpu->event_create(&m->done[1][g], 0), "cuEventCreate"))
            return -1;
    if (pthread_create(&m->thread, NULL, background, r)) {
        fprintf(stderr, "prophet-emu: rank %d: cannot start the Horovod thread\n", r->rank);
        return -1;
    }
    m->started = 1;
    return 0;
}

static int hvd_begin(struct emu_rank *r)
{
    (void)r;
    return 0;
}

static int hvd_ready(struct emu_rank *r, size_t g)
{
    struct hvd *m = r->mode;
    uint64_t s = seq_of(r, r->iter, g);

    if (emu_cu(r, emu_gpu->event_record(m->ready[g], r->compute), "cuEventRecord"))
        return -1;
    pthread_mutex_lock(&m->mu);
    m->enqueued = s + 1;
    pthread_mutex_unlock(&m->mu);
    if ((long)g == r->opt->host_sync_at)
        return wait_issued(r, m, s + 1) || emu_sync(r, m->stream) ? -1 : 0;
    return 0;
}

static int hvd_end(struct emu_rank *r)
{
    (void)r;
    return 0;
}

static int hvd_wait_grad(struct emu_rank *r, size_t g)
{
    struct hvd *m = r->mode;

    if (wait_issued(r, m, seq_of(r, r->iter - 1, g) + 1))
        return -1;
    return emu_compute_wait(r, m->done[emu_parity(r->iter - 1)][g]);
}

static int hvd_wait_all(struct emu_rank *r)
{
    struct hvd *m = r->mode;

    if (wait_issued(r, m, seq_of(r, r->iter + 1, 0)))
        return -1;
    for (size_t g = 0; g < r->ngrad; g++)
        if (emu_compute_wait(r, m->done[emu_parity(r->iter)][g]))
            return -1;
    return 0;
}

/* The Horovod stream, once the background thread has issued every response of the iteration
 * (after that it makes no NCCL call until the next iteration's gradients are enqueued), so that the
 * job's own call comes at the same point of every rank's sequence. */
static int hvd_job_stream(struct emu_rank *r, CUstream *s)
{
    struct hvd *m = r->mode;

    if (wait_issued(r, m, seq_of(r, r->iter + 1, 0)))
        return -1;
    *s = m->stream;
    return 0;
}

static void hvd_fini(struct emu_rank *r)
{
    struct hvd *m = r->mode;

    if (m->started) {
        pthread_mutex_lock(&m->mu);
        m->stop = 1;
        pthread_mutex_unlock(&m->mu);
        pthread_join(m->thread, NULL);
    }
    for (size_t g = 0; g < r->ngrad; g++) {
        if (m->ready && m->ready[g])
            emu_gpu->event_destroy(m->ready[g]);
        for (int p = 0; p < 2; p++)
            if (m->done[p] && m->done[p][g])
                emu_gpu->event_destroy(m->done[p][g]);
    }
    if (m->fusion)
        emu_gpu->mem_free(m->fusion);
    if (m->stream)
        emu_gpu->stream_destroy(m->stream);
    free(m->ready);
    free(m->done[0]);
    free(m->done[1]);
    free(m);
    r->mode = NULL;
}

const struct emu_mode_ops emu_mode_horovod = {
    .init = hvd_init,
    .begin_backward = hvd_begin,
    .grad_ready = hvd_ready,
    .end_backward = hvd_end,
    .wait_all = hvd_wait_all,
    .wait_grad = hvd_wait_grad,
    .job_stream = hvd_job_stream,
    .fini = hvd_fini,
};
