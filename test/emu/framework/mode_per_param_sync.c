/* PyTorch's `for p in model.parameters(): dist.all_reduce(p.grad)` after backward (synchronous
 * all_reduce, as in the PyTorch distributed tutorial's gradient averaging): per gradient, in
 * parameter order (the reverse of backward order), the process group's stream waits on an event
 * of the compute stream, the call, the work's end event and the future's event, and then the
 * compute stream waits on the end event (work.wait()). --current-stream (PyTorch 2.8's
 * async_op=False): the call goes on the compute stream itself, with no event at all.
 * --scale-each: a kernel on the compute stream multiplies each result by 1/ranks right after its
 * call (grad /= world_size). --unhooked-consumer: a kernel on the compute stream reads and checks
 * each result right after its call, launched through an entry point no interposer wraps.
 * --consumer: adversarial consumers right after the call (consumer.c). --second-comm: the odd
 * gradients on a second communicator and its own stream. */
#include <stdio.h>
#include <stdlib.h>

#include "gpu.h"
#include "rank.h"
#include "disturb.h"

struct per_param_sync {
    CUstream pg;
    CUstream pg2;     /* --second-comm: the odd gradients' process-group stream */
    ncclComm_t comm2; /* ... and communicator */
    CUevent ready; /* recorded on the compute stream before each call (reused, as PyTorch does) */
};

static int pps_init(struct emu_rank *r)
{
    struct per_param_sync *m = calloc(1, sizeof(*m));

    r->mode = m;
    if (!m) {
        fprintf(stderr, "prophet-emu: rank %d: out of memory\n", r->rank);
        return -1;
    }
    if (emu_cu(r, emu_gpu->stream_create(&m->pg, CU_STREAM_NON_BLOCKING), "cuStreamCreate") ||
        emu_cu(r, emu_gpu->event_create(&m->ready, CU_EVENT_DISABLE_TIMING), "cuEventCreate"))
        return -1;
    if (r->opt->second_comm &&
        (emu_cu(r, emu_gpu->stream_create(&m->pg2, CU_STREAM_NON_BLOCKING), "cuStreamCreate") ||
         emu_nccl(r, ncclCommSplit(r->comm, 0, r->rank, &m->comm2, NULL),
                  "ncclCommSplit (--second-comm)")))
        return -1;
    return 0;
}

static int pps_nothing(struct emu_rank *r)
{
    (void)r;
    return 0;
}

static int pps_grad_ready(struct emu_rank *r, size_t g)
{
    (void)r;
    (void)g;
    return 0;
}

static int pps_wait_grad(struct emu_rank *r, size_t g)
{
    (void)r;
    (void)g;
    return 0; /* the compute stream already waited after each call */
}

/* One dist.all_reduce(grad) and what follows it on the compute stream. */
static int all_reduce_one(struct emu_rank *r, size_t g)
{
    struct per_param_sync *m = r->mode;
    int other = m->comm2 && g % 2;
    CUstream s = r->opt->current_stream ? r->compute : other ? m->pg2 : m->pg;
    struct emu_work_events w = {0};

    if (!r->opt->current_stream &&
        (emu_cu(r, emu_gpu->event_record(m->ready, r->compute), "cuEventRecord") ||
         emu_cu(r, emu_gpu->stream_wait_event(s, m->ready), "cuStreamWaitEvent")))
        return -1;
    if ((other ? emu_allreduce_other(r, r->iter, m->comm2, r->grad[g], r->count[g], s)
               : emu_allreduce(r, r->iter, r->grad[g], r->grad[g], r->count[g], s)) ||
        emu_consumers_after_call(r, g, s))
        return -1;
    if (!r->opt->current_stream) {
        if (emu_record_work(r, s, &w) || emu_compute_wait(r, w.end) || emu_disturb_local(r, g) ||
            emu_disturb_after_call(r, g, s, w.end))
            return -1;
        emu_release_work(r, &w);
    } else if (emu_disturb_local(r, g) || emu_disturb_after_call(r, g, s, NULL)) {
        return -1;
    }
    if (r->opt->unhooked_consumer && emu_launch_unhooked_check(r, g, r->compute))
        return -1;
    if (r->opt->scale_each &&
        emu_launch_scale(r, r->grad[g], r->count[g], 1.0f / (float)r->nranks, r->compute))
        return -1;
    if ((long)g == r->opt->host_sync_at &&
        (emu_sync(r, s) || (!r->opt->scale_each && emu_check_after_sync(r, g))))
        return -1;
    return 0;
}

static int pps_end(struct emu_rank *r)
{
    for (size_t k = r->ngrad; k-- > 0;)
        if (all_reduce_one(r, k))
            return -1;
    return emu_consumers_join(r);
}

/* The calls' stream: the compute stream itself with --current-stream. */
static int pps_job_stream(struct emu_rank *r, CUstream *s)
{
    *s = r->opt->current_stream ? r->compute : ((struct per_param_sync *)r->mode)->pg;
    return 0;
}

static void pps_fini(struct emu_rank *r)
{
    struct per_param_sync *m = r->mode;

    if (m->ready)
        emu_gpu->event_destroy(m->ready);
    if (m->pg)
        emu_gpu->stream_destroy(m->pg);
    if (m->comm2)
        ncclCommDestroy(m->comm2);
    if (m->pg2)
        emu_gpu->stream_destroy(m->pg2);
    free(m);
    r->mode = NULL;
}

const struct emu_mode_ops emu_mode_per_param_sync = {
    .init = pps_init,
    .begin_backward = pps_nothing,
    .grad_ready = pps_grad_ready,
    .end_backward = pps_end,
    .wait_all = pps_nothing,
    .wait_grad = pps_wait_grad,
    .job_stream = pps_job_stream,
    .fini = pps_fini,
};
