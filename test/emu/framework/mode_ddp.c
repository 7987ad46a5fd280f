/* PyTorch DDP: gradients packed into buckets (first bucket small), one all-reduce per bucket on
 * the process group's stream, launched in bucket order once a bucket is full of ready gradients.
 * Iteration 0 uses the initial layout (reverse of parameter order); from iteration 1 on the
 * buckets are rebuilt in the order the gradients became ready in iteration 0. */
#include <stdio.h>
#include <stdlib.h>

#include "gpu.h"
#include "rank.h"
#include "disturb.h"

struct ddp_bucket {
    size_t first; /* index into layout order */
    size_t n;
    uint64_t bytes;
    CUdeviceptr buf;
    CUevent ready;                  /* recorded on the compute stream after the last copy in */
    struct emu_work_events work[2]; /* per iteration parity: end and future events, recorded on
                                     * the process group stream right after the call */
    size_t pending;
    int copied_back;
};

struct ddp_layout {
    size_t *order; /* gradient indices, bucket by bucket */
    struct ddp_bucket *b;
    size_t nb;
    size_t *bucket_of; /* per gradient */
    uint64_t *offset;  /* per gradient, bytes into its bucket */
};

struct ddp {
    CUstream pg;
    struct ddp_layout layout[2]; /* [0] initial, [1] rebuilt */
    struct ddp_layout *cur;
    size_t *ready_order; /* order in which gradients became ready in iteration 0 */
    size_t nready;
    size_t next_bucket;
};

static int oom(struct emu_rank *r)
{
    fprintf(stderr, "prophet-emu: rank %d: out of memory\n", r->rank);
    return -1;
}

/* Buckets over `order`: a bucket closes once it reaches its limit (first bucket: first_limit,
 * the others: limit), like DDP's compute_bucket_assignment_by_size. */
static int layout_build(struct emu_rank *r, struct ddp_layout *L, const size_t *order)
{
    uint64_t limits[2] = {emu_threshold_bytes(r, r->opt->first_bucket_mb),
                          emu_threshold_bytes(r, r->opt->bucket_mb)};
    size_t n = r->ngrad, nb = 0;
    uint64_t fill = 0;

    L->order = calloc(n, sizeof(*L->order));
    L->b = calloc(n + 1, sizeof(*L->b));
    L->bucket_of = calloc(n, sizeof(*L->bucket_of));
    L->offset = calloc(n, sizeof(*L->offset));
    if (!L->order || !L->b || !L->bucket_of || !L->offset)
        return oom(r);
    for (size_t k = 0; k < n; k++) {
        size_t g = order[k];
        struct ddp_bucket *b = &L->b[nb];
        if (b->n == 0)
            b->first = k;
        L->order[k] = g;
        L->bucket_of[g] = nb;
        L->offset[g] = b->bytes;
        b->bytes += emu_grad_bytes(r, g);
        b->n++;
        fill = b->bytes;
        if (fill >= limits[nb ? 1 : 0])
            nb++;
    }
    if (L->b[nb].n)
        nb++;
    L->nb = nb;
    for (size_t i = 0; i < nb; i++) {
        struct ddp_bucket *b = &L->b[i];
        if (emu_cu(r, emu_gpu->mem_alloc(&b->buf, b->bytes), "cuMemAlloc") ||
            emu_cu(r, emu_gpu->event_create(&b->ready, CU_EVENT_DISABLE_TIMING), "cuEventCreate"))
            return -1;
    }
    return 0;
}

static void layout_free(struct ddp_layout *L)
{
    for (size_t i = 0; L->b && i < L->nb; i++) {
        if (L->b[i].buf)
            emu_gpu->mem_free(L->b[i].buf);
        if (L->b[i].ready)
            emu_gpu->event_destroy(L->b[i].ready);
    }
    free(L->order);
    free(L->b);
    free(L->bucket_of);
    free(L->offset);
}

/* Initial order: reverse of parameter order, i.e. descending priority (ties: backward order). */
static int initial_order(struct emu_rank *r, size_t *order)
{
    size_t n = r->ngrad;

    for (size_t k = 0; k < n; k++)
        order[k] = k;
    for (size_t k = 1; k < n; k++) { /* insertion sort, stable */
        size_t g = order[k], j = k;
        while (j > 0 && r->prof->t[order[j - 1]].priority < r->prof->t[g].priority) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = g;
    }
    return 0;
}

static int ddp_init(struct emu_rank *r)
{
    struct ddp *m = calloc(1, sizeof(*m));
    size_t *order;
    int err;

    r->mode = m;
    if (!m || !(m->ready_order = calloc(r->ngrad, sizeof(size_t))))
        return oom(r);
    if (emu_cu(r, emu_gpu->stream_create(&m->pg, CU_STREAM_NON_BLOCKING), "cuStreamCreate"))
        return -1;
    order = calloc(r->ngrad, sizeof(*order));
    if (!order)
        return oom(r);
    initial_order(r, order);
    err = layout_build(r, &m->layout[0], order);
    free(order);
    m->cur = &m->layout[0];
    return err;
}

static int ddp_begin(struct emu_rank *r)
{
    struct ddp *m = r->mode;

    if (r->iter == 1) {
        if (m->nready != r->ngrad) {
            fprintf(stderr, "prophet-emu: rank %d: DDP saw %zu of %zu gradients ready\n", r->rank,
                    m->nready, r->ngrad);
            return -1;
        }
        if (layout_build(r, &m->layout[1], m->ready_order))
            return -1;
        m->cur = &m->layout[1];
    }
    for (size_t i = 0; i < m->cur->nb; i++) {
        m->cur->b[i].pending = m->cur->b[i].n;
        m->cur->b[i].copied_back = 0;
    }
    m->next_bucket = 0;
    return 0;
}

static int covers_host_sync(const struct emu_rank *r, const struct ddp_layout *L, size_t i)
{
    long at = r->opt->host_sync_at;

    return at >= 0 && (size_t)at < r->ngrad && L->bucket_of[at] == i;
}

static int launch_bucket(struct emu_rank *r, size_t i)
{
    struct ddp *m = r->mode;
    struct ddp_bucket *b = &m->cur->b[i];

    if (emu_cu(r, emu_gpu->event_record(b->ready, r->compute), "cuEventRecord") ||
        emu_cu(r, emu_gpu->stream_wait_event(m->pg, b->ready), "cuStreamWaitEvent") ||
        emu_allreduce(r, r->iter, b->buf, b->buf, b->bytes / sizeof(float), m->pg) ||
        emu_record_work(r, m->pg, &b->work[emu_parity(r->iter)]))
        return -1;
    for (size_t g = 0; g < r->ngrad; g++)
        if (m->cur->bucket_of[g] == i && emu_disturb_local(r, g))
            return -1;
    if (emu_disturb_after_call(r, SIZE_MAX, m->pg, b->work[emu_parity(r->iter)].end))
        return -1;
    if (covers_host_sync(r, m->cur, i) && emu_sync(r, m->pg))
        return -1;
    return 0;
}

static int ddp_ready(struct emu_rank *r, size_t g)
{
    struct ddp *m = r->mode;
    struct ddp_layout *L = m->cur;
    struct ddp_bucket *b = &L->b[L->bucket_of[g]];

    if (r->iter == 0)
        m->ready_order[m->nready++] = g;
    if (emu_cu(r,
               emu_gpu->copy_async(b->buf + L->offset[g], r->grad[g], emu_grad_bytes(r, g),
                                   r->compute),
               "cuMemcpyDtoDAsync (into bucket)"))
        return -1;
    b->pending--;
    while (m->next_bucket < L->nb && L->b[m->next_bucket].pending == 0)
        if (launch_bucket(r, m->next_bucket++))
            return -1;
    return 0;
}

static int ddp_end(struct emu_rank *r)
{
    struct ddp *m = r->mode;

    if (m->next_bucket != m->cur->nb) {
        fprintf(stderr, "prophet-emu: rank %d: DDP launched %zu of %zu buckets\n", r->rank,
                m->next_bucket, m->cur->nb);
        return -1;
    }
    return 0;
}

/* The compute stream waits for bucket i of iteration `iter` and copies its gradients back (once
 * per iteration). */
static int copy_back(struct emu_rank *r, size_t i, int iter)
{
    struct ddp *m = r->mode;
    struct ddp_layout *L = m->cur;
    struct ddp_bucket *b = &L->b[i];

    if (b->copied_back)
        return 0;
    b->copied_back = 1;
    /* --bucket-view: the job reads gradients only after the iteration's last bucket (its end
     * event is after every earlier bucket's on the FIFO process-group stream) */
    if (r->opt->bucket_view)
        b = &L->b[L->nb - 1];
    /* DDP's copy-back runs after the future's callback: it waits on the future's event */
    if (emu_compute_wait(r, b->work[emu_parity(iter)].fut))
        return -1;
    b = &L->b[i];
    /* done with bucket i's work (the handles go back to the cache at the iteration's end) */
    emu_release_work(r, &b->work[emu_parity(iter)]);
    for (size_t k = b->first; k < b->first + b->n; k++) {
        size_t g = L->order[k];
        if (emu_cu(r,
                   emu_gpu->copy_async(r->grad[g], b->buf + L->offset[g], emu_grad_bytes(r, g),
                                       r->compute),
                   "cuMemcpyDtoDAsync (out of bucket)"))
            return -1;
    }
    return 0;
}

static int ddp_wait_grad(struct emu_rank *r, size_t g)
{
    struct ddp *m = r->mode;

    return copy_back(r, m->cur->bucket_of[g], r->iter - 1);
}

static int ddp_wait_all(struct emu_rank *r)
{
    struct ddp *m = r->mode;

    for (size_t i = 0; i < m->cur->nb; i++)
        if (copy_back(r, i, r->iter))
            return -1;
    return 0;
}

static int ddp_job_stream(struct emu_rank *r, CUstream *s)
{
    *s = ((struct ddp *)r->mode)->pg;
    return 0;
}

static void ddp_fini(struct emu_rank *r)
{
    struct ddp *m = r->mode;

    layout_free(&m->layout[0]);
    layout_free(&m->layout[1]);
    if (m->pg)
        emu_gpu->stream_destroy(m->pg);
    free(m->ready_order);
    free(m);
    r->mode = NULL;
}

const struct emu_mode_ops emu_mode_ddp = {
    .init = ddp_init,
    .begin_backward = ddp_begin,
    .grad_ready = ddp_ready,
    .end_backward = ddp_end,
    .wait_all = ddp_wait_all,
    .wait_grad = ddp_wait_grad,
    .job_stream = ddp_job_stream,
    .fini = ddp_fini,
};
