/* The tensor-parallel communicator (--tp-comm N, --tp-elements E): per forward + backward pass
 * N all-reduces(sum, fp32, E elements) on the compute stream, N/2 spread evenly over the forward
 * layers and the rest over the backward ones. Each is: a kernel writes the rank's partial
 * activation, ncclAllReduce in place on the compute stream, a kernel reads the sum and checks it
 * (what the next layer's kernel does in Megatron). The communicator is a split of the gradients'
 * one with every rank in it (ncclCommSplit, as PyTorch makes a new group from the default one). */
#include "tp.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpu.h"
#include "rank.h"

struct emu_tp {
    ncclComm_t comm;
    CUdeviceptr buf;
    uint64_t calls;
    _Atomic uint64_t checked; /* by the check kernels, on the compute stream's thread */
};

ncclComm_t emu_tp_comm(const struct emu_rank *r)
{
    return r->tp ? r->tp->comm : NULL;
}

int emu_tp_init(struct emu_rank *r)
{
    struct emu_tp *t;

    if (!r->opt->tp_comm)
        return 0;
    t = calloc(1, sizeof(*t));
    r->tp = t;
    if (!t) {
        fprintf(stderr, "prophet-emu: rank %d: out of memory\n", r->rank);
        return -1;
    }
    if (emu_nccl(r, ncclCommSplit(r->comm, 0, r->rank, &t->comm, NULL), "ncclCommSplit (TP)"))
        return -1;
    if (!t->comm) {
        fprintf(stderr, "prophet-emu: rank %d: ncclCommSplit (TP) gave no communicator\n", r->rank);
        return -1;
    }
    return emu_cu(r, emu_gpu->mem_alloc(&t->buf, (size_t)r->opt->tp_elements * sizeof(float)),
                  "cuMemAlloc (TP)");
}

void emu_tp_check_kernel(void **params)
{
    const struct emu_tp_check *c = params[0];
    struct emu_rank *r = c->r;
    uint64_t wrong = 0, first = 0;
    float want0 = 0, got0 = 0;

    for (uint64_t i = 0; i < c->n; i++) {
        float want = c->base_sum + (float)(r->nranks * (int)(i % EMU_FILL_PERIOD));
        if (c->d[i] != want && !wrong++) {
            first = i;
            want0 = want;
            got0 = c->d[i];
        }
    }
    if (wrong)
        emu_rank_record_error(r,
                              "wrong tensor-parallel all-reduce result: iteration %d call %d "
                              "element %llu: expected %g, got %g (%llu of %llu elements wrong)",
                              c->iter, c->call, (unsigned long long)first, (double)want0,
                              (double)got0, (unsigned long long)wrong, (unsigned long long)c->n);
    else
        atomic_fetch_add(&r->tp->checked, 1);
}

/* One call: write, all-reduce on the compute stream, read and check by the next kernel. */
static int tp_call(struct emu_rank *r, int call)
{
    struct emu_tp *t = r->tp;
    int round = emu_value_round(r->iter, r->micro, r->opt->accumulate);
    uint64_t n = (uint64_t)r->opt->tp_elements;
    struct emu_tp_check c = {
        .r = r, .d = (const float *)(uintptr_t)t->buf, .n = n, .iter = r->iter, .call = call};
    void *params[] = {&c};

    for (int k = 0; k < r->nranks; k++)
        c.base_sum += emu_tp_value(round, call, k);
    if (emu_launch_fill_f32(r, t->buf, n, emu_tp_value(round, call, r->rank), r->compute) ||
        emu_nccl(r,
                 ncclAllReduce((const void *)t->buf, (void *)t->buf, n, ncclFloat32, ncclSum,
                               t->comm, r->compute),
                 "ncclAllReduce (TP)"))
        return -1;
    t->calls++;
    /* the all-reduce took real time on the compute stream: the next kernel's clock restarts */
    r->compute_waited = 2;
    return emu_cu(r, emu_gpu->launch(r->k_tp_check, params, r->compute),
                  "cuLaunchKernel (TP check)");
}

/* Calls of a pass of n calls that follow the layer at position pos of `layers`: floor((pos + 1) *
 * n / layers) - floor(pos * n / layers), so the n calls are spread evenly. */
static size_t calls_after(size_t n, size_t layers, size_t pos)
{
    return (pos + 1) * n / layers - pos * n / layers;
}

int emu_tp_after_layer(struct emu_rank *r, enum emu_tp_phase phase, size_t pos)
{
    size_t total = (size_t)r->opt->tp_comm, fwd = total / 2;
    size_t n = phase == EMU_TP_FORWARD ? fwd : total - fwd;
    size_t first, k;

    if (!r->tp || !n)
        return 0;
    k = calls_after(n, r->ngrad, pos);
    first = pos * n / r->ngrad + (phase == EMU_TP_FORWARD ? 0 : fwd);
    for (size_t j = 0; j < k; j++)
        if (tp_call(r, (int)(first + j)))
            return -1;
    return 0;
}

void emu_tp_report(struct emu_rank *r)
{
    struct emu_rank_result *res = &r->sh->result[r->rank];

    if (!r->tp)
        return;
    res->tp_allreduces = r->tp->calls;
    res->tp_checked = atomic_load(&r->tp->checked);
}

void emu_tp_fini(struct emu_rank *r)
{
    struct emu_tp *t = r->tp;

    if (!t)
        return;
    if (t->comm)
        ncclCommDestroy(t->comm);
    if (t->buf)
        emu_gpu->mem_free(t->buf);
    free(t);
    r->tp = NULL;
}
