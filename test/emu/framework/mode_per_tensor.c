/* Naive per-parameter hooks with torch.distributed: one all-reduce per gradient on the process
 * group's stream, which first waits on the compute stream through an event. */
#include <stdio.h>
#include <stdlib.h>

#include "rank.h"

struct per_tensor {
    CUstream pg;     /* the process group's NCCL stream */
    CUevent *ready;  /* per gradient, recorded on the compute stream */
    CUevent *end[2]; /* per iteration parity and gradient, recorded on pg right after the call */
};

static int per_tensor_init(struct emu_rank *r)
{
    struct per_tensor *m = calloc(1, sizeof(*m));

    r->mode = m;
    if (!m || !(m->ready = calloc(r->ngrad, sizeof(CUevent))) ||
        !(m->end[0] = calloc(r->ngrad, sizeof(CUevent))) ||
        !(m->end[1] = calloc(r->ngrad, sizeof(CUevent)))) {
        fprintf(stderr, "prophet-emu: rank %d: out of memory\n", r->rank);
        return -1;
    }
    if (emu_cu(r, cuStreamCreate(&m->pg, CU_STREAM_NON_BLOCKING), "cuStreamCreate"))
        return -1;
    for (size_t g = 0; g < r->ngrad; g++)
        if (emu_cu(r, cuEventCreate(&m->ready[g], CU_EVENT_DISABLE_TIMING), "cuEventCreate") ||
            emu_cu(r, cuEventCreate(&m->end[0][g], 0), "cuEventCreate") ||
            emu_cu(r, cuEventCreate(&m->end[1][g], 0), "cuEventCreate"))
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
    if (emu_cu(r, cuEventRecord(m->ready[g], r->compute), "cuEventRecord") ||
        emu_cu(r, cuStreamWaitEvent(m->pg, m->ready[g], 0), "cuStreamWaitEvent") ||
        emu_allreduce(r, r->iter, r->grad[g], r->grad[g], r->count[g], m->pg) ||
        emu_cu(r, cuEventRecord(m->end[emu_parity(r->iter)][g], m->pg), "cuEventRecord"))
        return -1;
    if ((long)g == r->opt->host_sync_at && emu_sync(r, m->pg))
        return -1;
    return 0;
}

static int per_tensor_end(struct emu_rank *r)
{
    (void)r;
    return 0;
}

static int per_tensor_wait_grad(struct emu_rank *r, size_t g)
{
    struct per_tensor *m = r->mode;

    return emu_compute_wait(r, m->end[emu_parity(r->iter - 1)][g]);
}

static int per_tensor_wait_all(struct emu_rank *r)
{
    struct per_tensor *m = r->mode;

    for (size_t g = 0; g < r->ngrad; g++)
        if (emu_compute_wait(r, m->end[emu_parity(r->iter)][g]))
            return -1;
    return 0;
}

static void per_tensor_fini(struct emu_rank *r)
{
    struct per_tensor *m = r->mode;

    for (size_t g = 0; g < r->ngrad; g++) {
        if (m->ready && m->ready[g])
            cuEventDestroy(m->ready[g]);
        for (int p = 0; p < 2; p++)
            if (m->end[p] && m->end[p][g])
                cuEventDestroy(m->end[p][g]);
    }
    if (m->pg)
        cuStreamDestroy(m->pg);
    free(m->ready);
    free(m->end[0]);
    free(m->end[1]);
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
    .fini = per_tensor_fini,
};
