/* Naive per-parameter hooks with torch.distributed: one all-reduce per gradient on the process
 * group's stream, which first waits on the compute stream through an event; after the call the
 * work's end event and the future's event are recorded on that stream (handles from the event
 * cache), and work.wait() makes the compute stream wait on the end event. --consumer: adversarial
 * consumers right after the call (consumer.c). */
#include <stdio.h>
#include <stdlib.h>

#include "gpu.h"
#include "rank.h"
#include "disturb.h"

struct per_tensor {
    CUstream pg;                  /* the process group's NCCL stream */
    CUevent ready;                /* recorded on the compute stream before each call (reused) */
    struct emu_work_events *w[2]; /* per iteration parity and gradient */
};

static int per_tensor_init(struct emu_rank *r)
{
    struct per_tensor *m = calloc(1, sizeof(*m));

    r->mode = m;
    if (!m || !(m->w[0] = calloc(r->ngrad, sizeof(*m->w[0]))) ||
        !(m->w[1] = calloc(r->ngrad, sizeof(*m->w[1])))) {
        fprintf(stderr, "prophet-emu: rank %d: out of memory\n", r->rank);
        return -1;
    }
    if (emu_cu(r, emu_gpu->stream_create(&m->pg, CU_STREAM_NON_BLOCKING), "cuStreamCreate") ||
        emu_cu(r, emu_gpu->event_create(&m->ready, CU_EVENT_DISABLE_TIMING), "cuEventCreate"))
        return -1;
    return 0;
}

static int per_tensor_begin(struct emu_rank *r)
{
    (void)r;
    return 0;
}

static int per_tensor_ready(struct emu_rank *r, size_t g)
{
    struct per_tensor *m = r->mode;

    if (emu_grad_dropped(r, r->iter, g))
        return 0; /* --change-at-iter: this gradient is frozen from now on */
    if (emu_cu(r, emu_gpu->event_record(m->ready, r->compute), "cuEventRecord") ||
        emu_cu(r, emu_gpu->stream_wait_event(m->pg, m->ready), "cuStreamWaitEvent") ||
        emu_allreduce(r, r->iter, r->grad[g], r->grad[g], r->count[g], m->pg) ||
        emu_consumers_after_call(r, g, m->pg) ||
        emu_record_work(r, m->pg, &m->w[emu_parity(r->iter)][g]) || emu_disturb_local(r, g) ||
        emu_disturb_after_call(r, g, m->pg, m->w[emu_parity(r->iter)][g].end))
        return -1;
    if ((long)g == r->opt->host_sync_at && (emu_sync(r, m->pg) || emu_check_after_sync(r, g)))
        return -1;
    return 0;
}

static int per_tensor_end(struct emu_rank *r)
{
    (void)r;
    return 0;
}

/* work.wait(): the compute stream waits on the end event; the work is done with. */
static int work_wait(struct emu_rank *r, struct emu_work_events *w)
{
    if (!w->end)
        return 0; /* --change-at-iter: no call */
    if (emu_compute_wait(r, w->end))
        return -1;
    emu_release_work(r, w);
    return 0;
}

static int per_tensor_wait_grad(struct emu_rank *r, size_t g)
{
    struct per_tensor *m = r->mode;

    return work_wait(r, &m->w[emu_parity(r->iter - 1)][g]);
}

static int per_tensor_wait_all(struct emu_rank *r)
{
    struct per_tensor *m = r->mode;

    if (emu_consumers_join(r))
        return -1;
    for (size_t g = 0; g < r->ngrad; g++)
        if (work_wait(r, &m->w[emu_parity(r->iter)][g]))
            return -1;
    return 0;
}

static int per_tensor_job_stream(struct emu_rank *r, CUstream *s)
{
    *s = ((struct per_tensor *)r->mode)->pg;
    return 0;
}

static void per_tensor_fini(struct emu_rank *r)
{
    struct per_tensor *m = r->mode;

    if (m->ready)
        emu_gpu->event_destroy(m->ready);
    if (m->pg)
        emu_gpu->stream_destroy(m->pg);
    free(m->w[0]);
    free(m->w[1]);
    free(m);
    r->mode = NULL;
}

const struct emu_mode_ops emu_mode_per_tensor = {
    .init = per_tensor_init,
    .begin_backward = per_tensor_begin,
    .grad_ready = per_tensor_ready,
    .end_backward = per_tensor_end,
    .wait_all = per_tensor_wait_all,
    .wait_grad = per_tensor_wait_grad,
    .job_stream = per_tensor_job_stream,
    .fini = per_tensor_fini,
};
