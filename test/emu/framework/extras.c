/* The loss all-reduce and the evaluation phase: small collectives of the job itself on the
 * gradients' communicator and process-group stream, each followed by a host synchronisation of
 * that stream (loss.item(), metrics read on the host) and an exact check. The values are written
 * by kernels on the compute stream (the loss and the metrics are computed there); the
 * process-group stream waits for them through an event, as torch.distributed does. */
#include "extras.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu.h"
#include "rank.h"

/* The evaluation's three metrics: a scalar, a vector and a count in another type on purpose. */
enum { EMU_METRICS = 3 };
static const struct {
    ncclDataType_t dtype;
    size_t count;
    const char *name;
} metric_def[EMU_METRICS] = {
    {ncclFloat32, 1, "fp32 x1"},
    {ncclFloat32, 4, "fp32 x4"},
    {ncclInt64, 2, "int64 x2"},
};

struct emu_extras {
    CUevent ready;     /* recorded on the compute stream once the values are written */
    CUdeviceptr loss;  /* one fp32 */
    CUdeviceptr *eval; /* [rep * EMU_METRICS + metric] */
    uint64_t loss_calls, loss_checked, eval_calls, eval_checked;
};

static int due(const struct emu_rank *r, int every)
{
    return every > 0 && (r->iter + 1) % every == 0;
}

int emu_extras_init(struct emu_rank *r)
{
    const struct emu_options *o = r->opt;
    struct emu_extras *x;
    size_t n = (size_t)o->eval_calls * EMU_METRICS;

    if (!o->loss_every && !o->eval_every)
        return 0;
    x = calloc(1, sizeof(*x));
    r->extras = x;
    if (!x || !(x->eval = calloc(n, sizeof(*x->eval)))) {
        fprintf(stderr, "prophet-emu: rank %d: out of memory\n", r->rank);
        return -1;
    }
    if (emu_cu(r, emu_gpu->event_create(&x->ready, CU_EVENT_DISABLE_TIMING), "cuEventCreate") ||
        emu_cu(r, emu_gpu->mem_alloc(&x->loss, sizeof(float)), "cuMemAlloc (loss)"))
        return -1;
    for (size_t k = 0; o->eval_every && k < n; k++) {
        size_t bytes = metric_def[k % EMU_METRICS].count * 8; /* fp32 or int64 */
        if (emu_cu(r, emu_gpu->mem_alloc(&x->eval[k], bytes), "cuMemAlloc (metric)"))
            return -1;
    }
    return 0;
}

/* The values written on the compute stream become visible to stream s (event + wait). */
static int after_compute(struct emu_rank *r, CUstream s)
{
    struct emu_extras *x = r->extras;

    if (s == r->compute)
        return 0;
    if (emu_cu(r, emu_gpu->event_record(x->ready, r->compute), "cuEventRecord (extras)") ||
        emu_cu(r, emu_gpu->stream_wait_event(s, x->ready), "cuStreamWaitEvent (extras)"))
        return -1;
    return 0;
}

/* The host waits for stream s; the compute stream may have run dry meanwhile, so its next kernel
 * starts its clock afresh. */
static int host_sync(struct emu_rank *r, CUstream s)
{
    r->compute_waited = 2;
    return emu_sync(r, s);
}

static float loss_sum(const struct emu_rank *r)
{
    float sum = 0;

    for (int k = 0; k < r->nranks; k++)
        sum += emu_loss_value(r->iter, k);
    return sum;
}

int emu_extras_loss(struct emu_rank *r)
{
    struct emu_extras *x = r->extras;
    CUstream s;
    float got = 0, want;

    if (!due(r, r->opt->loss_every))
        return 0;
    if (r->ops->job_stream(r, &s) ||
        emu_launch_fill_f32(r, x->loss, 1, emu_loss_value(r->iter, r->rank), r->compute) ||
        after_compute(r, s) || emu_allreduce_job(r, x->loss, 1, ncclFloat32, s))
        return -1;
    x->loss_calls++;
    if (host_sync(r, s) ||
        emu_cu(r, emu_gpu->copy_to_host(&got, x->loss, sizeof(got)), "cuMemcpyDtoH (loss)"))
        return -1;
    want = loss_sum(r);
    if (got != want) {
        fprintf(stderr,
                "prophet-emu: rank %d: wrong loss all-reduce result: iteration %d: expected %g, "
                "got %g\n",
                r->rank, r->iter, (double)want, (double)got);
        return -1;
    }
    x->loss_checked++;
    return 0;
}

/* Writes metric m of repetition rep on the compute stream. */
static int write_metric(struct emu_rank *r, int rep, int m)
{
    struct emu_extras *x = r->extras;
    CUdeviceptr d = x->eval[rep * EMU_METRICS + m];

    if (metric_def[m].dtype == ncclInt64)
        return emu_launch_fill_i64(r, d, metric_def[m].count, emu_metric_i64(r->iter, rep, r->rank),
                                   r->compute);
    return emu_launch_fill_f32(r, d, metric_def[m].count, emu_metric_f32(r->iter, rep, m, r->rank),
                               r->compute);
}

/* The expected sum of element i of metric m of repetition rep, and what arrived, as int64 (every
 * fp32 value involved is an integer). */
static int64_t metric_want(const struct emu_rank *r, int rep, int m, size_t i)
{
    int64_t sum = (int64_t)r->nranks * (int64_t)(i % EMU_FILL_PERIOD);

    for (int k = 0; k < r->nranks; k++)
        sum += metric_def[m].dtype == ncclInt64 ? emu_metric_i64(r->iter, rep, k)
                                                : (int64_t)emu_metric_f32(r->iter, rep, m, k);
    return sum;
}

static int64_t metric_got(const unsigned char *host, int m, size_t i)
{
    if (metric_def[m].dtype == ncclInt64) {
        int64_t v;
        memcpy(&v, host + i * sizeof(v), sizeof(v));
        return v;
    }
    float f;
    memcpy(&f, host + i * sizeof(f), sizeof(f));
    return (int64_t)f == f ? (int64_t)f : INT64_MIN; /* a fraction is wrong anyway */
}

/* Reads metric m of repetition rep back to the host and checks every element. */
static int check_metric(struct emu_rank *r, int rep, int m)
{
    struct emu_extras *x = r->extras;
    unsigned char host[8 * 4];
    size_t n = metric_def[m].count;

    if (emu_cu(r,
               emu_gpu->copy_to_host(host, x->eval[rep * EMU_METRICS + m],
                                     n * (metric_def[m].dtype == ncclInt64 ? 8 : 4)),
               "cuMemcpyDtoH (metric)"))
        return -1;
    for (size_t i = 0; i < n; i++) {
        int64_t want = metric_want(r, rep, m, i), got = metric_got(host, m, i);
        if (got != want) {
            fprintf(
                stderr,
                "prophet-emu: rank %d: wrong evaluation all-reduce result: iteration %d call %d "
                "metric %d (%s) element %zu: expected %lld, got %lld\n",
                r->rank, r->iter, rep, m, metric_def[m].name, i, (long long)want, (long long)got);
            return -1;
        }
    }
    x->eval_checked++;
    return 0;
}

int emu_extras_eval(struct emu_rank *r)
{
    struct emu_extras *x = r->extras;
    int reps = r->opt->eval_calls;
    CUstream s;

    if (!due(r, r->opt->eval_every))
        return 0;
    if (r->ops->job_stream(r, &s))
        return -1;
    for (int rep = 0; rep < reps; rep++)
        for (int m = 0; m < EMU_METRICS; m++)
            if (write_metric(r, rep, m))
                return -1;
    if (after_compute(r, s))
        return -1;
    for (int rep = 0; rep < reps; rep++)
        for (int m = 0; m < EMU_METRICS; m++) {
            if (emu_allreduce_job(r, x->eval[rep * EMU_METRICS + m], metric_def[m].count,
                                  metric_def[m].dtype, s))
                return -1;
            x->eval_calls++;
        }
    if (host_sync(r, s))
        return -1;
    for (int rep = 0; rep < reps; rep++)
        for (int m = 0; m < EMU_METRICS; m++)
            if (check_metric(r, rep, m))
                return -1;
    return 0;
}

void emu_extras_report(struct emu_rank *r)
{
    struct emu_rank_result *res = &r->sh->result[r->rank];
    struct emu_extras *x = r->extras;

    if (!x)
        return;
    res->loss_allreduces = x->loss_calls;
    res->loss_checked = x->loss_checked;
    res->eval_allreduces = x->eval_calls;
    res->eval_checked = x->eval_checked;
}

void emu_extras_fini(struct emu_rank *r)
{
    struct emu_extras *x = r->extras;
    size_t n = (size_t)r->opt->eval_calls * EMU_METRICS;

    if (!x)
        return;
    for (size_t k = 0; x->eval && k < n; k++)
        if (x->eval[k])
            emu_gpu->mem_free(x->eval[k]);
    if (x->loss)
        emu_gpu->mem_free(x->loss);
    if (x->ready)
        emu_gpu->event_destroy(x->ready);
    free(x->eval);
    free(x);
    r->extras = NULL;
}
