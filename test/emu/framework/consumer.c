/* --consumer: the adversarial consumers (consumer.h). Each reads a gradient right after its call
 * through one path that orders work after the call without a stream wait on the call's own events:
 *   ctx-record    cuCtxRecordEvent(ctx, E), cuStreamWaitEvent(side, E), the check on side
 *   ctx-wait      cuEventRecord(E, s), cuCtxWaitEvent(ctx, E), the check on side
 *   launch-event  cuEventRecord(E, s) (the handle's earlier use, as an event cache hands it out),
 *                 then a kernel on s by cuLaunchKernelEx whose LAUNCH_COMPLETION_EVENT (odd
 *                 iterations: PROGRAMMATIC_EVENT) attribute records E; side waits on E and checks
 *   graph-wait    cuEventRecord(E, s); a graph built node by node [event-wait node on E, host node
 *                 that checks], instantiated and launched on side (the emulated driver has no
 *                 kernel nodes: the host node is the graph's reader)
 *   ipc           cuEventRecord(E, s) of an interprocess event; the rank's consumer process
 *                 (consumer_ipc.c), which opened E and the gradients' memory handles, waits on E,
 *                 copies the gradient and answers with it; the rank waits for the answer and checks
 *                 it (needs EMU_CUDA_IPC_MEM=1: the emulated driver shares only such memory)
 * s is the call's stream. The checks are launched with emuLaunchKernel (or are a graph's host
 * node), which no interposer sees. The compute stream waits for the side stream once per
 * iteration (emu_consumers_join), before the next backward writes the gradients again. */
#include "consumer.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "consumer_ipc.h"
#include "emu_cuda.h"
#include "gpu.h"
#include "rank.h"

#define EMU_CONSUMER_EVERY                                                                         \
    4 /* gradients g with g mod 4 = 0: blocks of several calls still form                          \
       */

struct emu_consumers {
    CUcontext ctx;
    CUstream side;
    CUevent ev[EMU_CONSUMER_KINDS];
    CUevent join[2]; /* per iteration parity (emu_compute_wait) */
    CUmodule mod;
    CUfunction nop;                                         /* launch-event's kernel */
    _Atomic unsigned long long checked[EMU_CONSUMER_KINDS]; /* checks that ran */
    unsigned long long begun[EMU_CONSUMER_KINDS];           /* consumers issued */
    unsigned long long held_at[EMU_CONSUMER_KINDS];         /* issued while calls were held */
    struct emu_ipc_peer peer;                               /* ipc: the consumer process */
    CUipcMemHandle *mem;                                    /* ipc: per gradient */
    float *ipc_buf; /* ipc: the values read, max_count floats */
};

struct consumer_check {
    struct emu_rank *r;
    int iter;
    size_t g;
    enum emu_consumer_kind k;
};

static void nop_kernel(void **params)
{
    (void)params;
}

static const struct emuKernelDef nop_def = {"nop", nop_kernel, 0, {0}};
static const struct emuModuleImage nop_image = {EMU_MODULE_MAGIC, 1, &nop_def};

static int has(const struct emu_rank *r, enum emu_consumer_kind k)
{
    return (r->opt->consumers >> k) & 1u;
}

/* ipc: the interprocess event, every gradient's memory handle (now, while no work on them is in
 * flight: the emulated driver moves an allocation at its first handle), the consumer process. */
static int ipc_init(struct emu_rank *r)
{
    struct emu_consumers *c = r->consumers;

    c->mem = calloc(r->ngrad, sizeof(*c->mem));
    c->ipc_buf = malloc(r->max_count * sizeof(float));
    if (!c->mem || !c->ipc_buf)
        return emu_cu(r, CUDA_ERROR_OUT_OF_MEMORY, "consumers (ipc)");
    if (emu_cu(r,
               cuEventCreate(&c->ev[EMU_CONSUMER_IPC],
                             CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING),
               "cuEventCreate (CU_EVENT_INTERPROCESS)"))
        return -1;
    for (size_t g = 0; g < r->ngrad; g++)
        if (emu_cu(r, cuIpcGetMemHandle(&c->mem[g], r->grad[g]),
                   "cuIpcGetMemHandle (--consumer ipc needs EMU_CUDA_IPC_MEM=1)"))
            return -1;
    if (emu_ipc_peer_start(&c->peer, c->ev[EMU_CONSUMER_IPC], r->device)) {
        fprintf(stderr, "prophet-emu: rank %d: cannot start the ipc consumer\n", r->rank);
        return -1;
    }
    return 0;
}

/* ipc: the consumer process reads gradient g behind E's latest record; the rank checks it. */
static int ipc_check(struct emu_rank *r, size_t g)
{
    struct emu_consumers *c = r->consumers;

    if (emu_ipc_peer_read(&c->peer, g, &c->mem[g], emu_grad_bytes(r, g), c->ipc_buf)) {
        fprintf(stderr, "prophet-emu: rank %d: ipc consumer failed\n", r->rank);
        return -1;
    }
    emu_check_gradient(r, r->iter, g, c->ipc_buf);
    atomic_fetch_add(&c->checked[EMU_CONSUMER_IPC], 1);
    return 0;
}

int emu_consumers_init(struct emu_rank *r)
{
    struct emu_consumers *c;

    if (!r->opt->consumers)
        return 0;
    c = calloc(1, sizeof(*c));
    r->consumers = c;
    if (!c)
        return emu_cu(r, CUDA_ERROR_OUT_OF_MEMORY, "consumers");
    if (emu_cu(r, cuStreamGetCtx(r->compute, &c->ctx), "cuStreamGetCtx") ||
        emu_cu(r, emu_gpu->stream_create(&c->side, CU_STREAM_NON_BLOCKING), "cuStreamCreate") ||
        emu_cu(r, emu_gpu->event_create(&c->join[0], CU_EVENT_DISABLE_TIMING), "cuEventCreate") ||
        emu_cu(r, emu_gpu->event_create(&c->join[1], CU_EVENT_DISABLE_TIMING), "cuEventCreate"))
        return -1;
    c->peer.fd = -1;
    for (int k = 0; k < EMU_CONSUMER_KINDS; k++)
        if (k != EMU_CONSUMER_IPC && has(r, (enum emu_consumer_kind)k) &&
            emu_cu(r, cuEventCreate(&c->ev[k], CU_EVENT_DISABLE_TIMING), "cuEventCreate"))
            return -1;
    if (has(r, EMU_CONSUMER_IPC) && ipc_init(r))
        return -1;
    if (has(r, EMU_CONSUMER_LAUNCH_EVENT) &&
        (emu_cu(r, cuModuleLoadData(&c->mod, &nop_image), "cuModuleLoadData") ||
         emu_cu(r, cuModuleGetFunction(&c->nop, c->mod, "nop"), "cuModuleGetFunction")))
        return -1;
    return 0;
}

/* The check of gradient g of this iteration, run where the path put it. */
static void check_fn(void *p)
{
    struct consumer_check *a = p;

    emu_check_gradient(a->r, a->iter, a->g, (const float *)(uintptr_t)a->r->grad[a->g]);
    atomic_fetch_add(&a->r->consumers->checked[a->k], 1);
    free(a);
}

static struct consumer_check *new_check(struct emu_rank *r, size_t g, enum emu_consumer_kind k)
{
    struct consumer_check *a = malloc(sizeof(*a));

    if (a)
        *a = (struct consumer_check){r, r->iter, g, k};
    else
        emu_cu(r, CUDA_ERROR_OUT_OF_MEMORY, "consumer check");
    return a;
}

/* The check on the side stream, launched where no interposer sees it. */
static int check_on_side(struct emu_rank *r, size_t g, enum emu_consumer_kind k)
{
    struct consumer_check *a = new_check(r, g, k);

    if (!a)
        return -1;
    return emu_cu(r, emuLaunchKernel(r->consumers->side, 0, check_fn, a),
                  "emuLaunchKernel (consumer check)");
}

static int launch_with_event(struct emu_rank *r, CUevent e, CUstream s)
{
    struct emu_consumers *c = r->consumers;
    CUlaunchAttribute at;
    CUlaunchConfig cfg;

    memset(&at, 0, sizeof(at));
    memset(&cfg, 0, sizeof(cfg));
    if (r->iter % 2) {
        at.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT;
        at.value.programmaticEvent.event = e;
    } else {
        at.id = CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT;
        at.value.launchCompletionEvent.event = e;
    }
    cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
    cfg.blockDimX = cfg.blockDimY = cfg.blockDimZ = 1;
    cfg.hStream = s;
    cfg.attrs = &at;
    cfg.numAttrs = 1;
    return emu_cu(r, cuLaunchKernelEx(&cfg, c->nop, NULL, NULL), "cuLaunchKernelEx");
}

/* A graph [wait node on e, host node checking g], launched on the side stream once. */
static int graph_check(struct emu_rank *r, CUevent e, size_t g)
{
    struct emu_consumers *c = r->consumers;
    CUgraph gr = NULL;
    CUgraphExec x = NULL;
    CUgraphNode wait_node, host_node;
    CUDA_HOST_NODE_PARAMS hp = {check_fn, NULL};
    int err = -1;

    if (!(hp.userData = new_check(r, g, EMU_CONSUMER_GRAPH_WAIT)))
        return -1;
    if (emu_cu(r, cuGraphCreate(&gr, 0), "cuGraphCreate") ||
        emu_cu(r, cuGraphAddEventWaitNode(&wait_node, gr, NULL, 0, e), "cuGraphAddEventWaitNode") ||
        emu_cu(r, cuGraphAddHostNode(&host_node, gr, &wait_node, 1, &hp), "cuGraphAddHostNode") ||
        emu_cu(r, cuGraphInstantiate(&x, gr, 0), "cuGraphInstantiate"))
        goto out;
    if (emu_cu(r, cuGraphLaunch(x, c->side), "cuGraphLaunch")) /* the host node owns the check */
        goto out;
    hp.userData = NULL;
    err = 0;
out:
    free(hp.userData);
    if (x)
        cuGraphExecDestroy(x);
    if (gr)
        cuGraphDestroy(gr);
    return err;
}

static int consume(struct emu_rank *r, enum emu_consumer_kind k, size_t g, CUstream s)
{
    struct emu_consumers *c = r->consumers;
    CUevent e = c->ev[k];

    switch (k) {
    case EMU_CONSUMER_CTX_RECORD:
        if (emu_cu(r, cuCtxRecordEvent(c->ctx, e), "cuCtxRecordEvent") ||
            emu_cu(r, cuStreamWaitEvent(c->side, e, 0), "cuStreamWaitEvent (side)"))
            return -1;
        return check_on_side(r, g, k);
    case EMU_CONSUMER_CTX_WAIT:
        if (emu_cu(r, cuEventRecord(e, s), "cuEventRecord") ||
            emu_cu(r, cuCtxWaitEvent(c->ctx, e), "cuCtxWaitEvent"))
            return -1;
        return check_on_side(r, g, k);
    case EMU_CONSUMER_LAUNCH_EVENT:
        if (emu_cu(r, cuEventRecord(e, s), "cuEventRecord") || launch_with_event(r, e, s) ||
            emu_cu(r, cuStreamWaitEvent(c->side, e, 0), "cuStreamWaitEvent (side)"))
            return -1;
        return check_on_side(r, g, k);
    case EMU_CONSUMER_GRAPH_WAIT:
        if (emu_cu(r, cuEventRecord(e, s), "cuEventRecord"))
            return -1;
        return graph_check(r, e, g);
    case EMU_CONSUMER_IPC:
        if (emu_cu(r, cuEventRecord(e, s), "cuEventRecord (interprocess)"))
            return -1;
        return ipc_check(r, g);
    default:
        return 0;
    }
}

int emu_consumers_after_call(struct emu_rank *r, size_t g, CUstream s)
{
    struct emu_consumers *c = r->consumers;
    long long held;

    if (!c || g % EMU_CONSUMER_EVERY)
        return 0;
    held = emu_held(r); /* before the consumer's first call, which may release them */
    for (int k = 0; k < EMU_CONSUMER_KINDS; k++) {
        if (!has(r, (enum emu_consumer_kind)k))
            continue;
        c->begun[k]++;
        if (held > 0)
            c->held_at[k]++;
        if (consume(r, (enum emu_consumer_kind)k, g, s))
            return -1;
    }
    return 0;
}

int emu_consumers_join(struct emu_rank *r)
{
    struct emu_consumers *c = r->consumers;
    CUevent j;

    if (!c)
        return 0;
    j = c->join[emu_parity(r->iter)];
    if (emu_cu(r, emu_gpu->event_record(j, c->side), "cuEventRecord (consumers' join)"))
        return -1;
    return emu_compute_wait(r, j);
}

int emu_consumers_end(struct emu_rank *r)
{
    struct emu_consumers *c = r->consumers;
    int err = 0;

    if (!c)
        return 0;
    if (emu_sync(r, c->side))
        return -1;
    for (int k = 0; k < EMU_CONSUMER_KINDS; k++) {
        if (!has(r, (enum emu_consumer_kind)k))
            continue;
        fprintf(stderr,
                "prophet-emu: rank %d: consumer %s: %llu read(s) begun, %llu while calls were "
                "held, %llu checked\n",
                r->rank, emu_consumer_name((enum emu_consumer_kind)k), c->begun[k], c->held_at[k],
                (unsigned long long)atomic_load(&c->checked[k]));
        if (atomic_load(&r->held_max) > 0 && !c->held_at[k]) {
            fprintf(stderr,
                    "prophet-emu: rank %d: consumer %s never began while calls were held "
                    "(the interposer held some): nothing tested\n",
                    r->rank, emu_consumer_name((enum emu_consumer_kind)k));
            err = -1;
        }
        if (atomic_load(&c->checked[k]) != c->begun[k]) {
            fprintf(stderr, "prophet-emu: rank %d: consumer %s: %llu check(s) never ran\n", r->rank,
                    emu_consumer_name((enum emu_consumer_kind)k),
                    c->begun[k] - (unsigned long long)atomic_load(&c->checked[k]));
            err = -1;
        }
    }
    return err;
}

void emu_consumers_fini(struct emu_rank *r)
{
    struct emu_consumers *c = r->consumers;

    if (!c)
        return;
    emu_ipc_peer_stop(&c->peer);
    for (int k = 0; k < EMU_CONSUMER_KINDS; k++)
        if (c->ev[k])
            cuEventDestroy(c->ev[k]);
    for (int i = 0; i < 2; i++)
        if (c->join[i])
            emu_gpu->event_destroy(c->join[i]);
    if (c->side)
        emu_gpu->stream_destroy(c->side);
    if (c->mod)
        cuModuleUnload(c->mod);
    free(c->mem);
    free(c->ipc_buf);
    free(c);
    r->consumers = NULL;
}
