/* Rank-local host events, polling waits and consumers on extra streams (disturb.h). What one
 * rank's host does here, no other rank does at the same point: the job's NCCL calls stay the same
 * on every rank, and every result is still checked exactly, so an interposer that let such an
 * event change how it groups the calls on one rank fails the run (the emulated NCCL reports a
 * group that differs between ranks, or a result is wrong), and one that never releases a polled
 * call hangs it (--timeout). */
#include "disturb.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "gpu.h"
#include "rank.h"

#define EMU_SCRATCH_BYTES (1u << 20)
#define EMU_RECENT 16 /* end events the chaos thread may query */

struct emu_disturb {
    CUstream side[EMU_MAX_EXTRA_STREAMS];
    int nside;
    uint64_t rng; /* the calling thread's draws (xorshift64*), seeded per rank */
    _Atomic(CUevent) recent[EMU_RECENT];
    unsigned recent_next;
    pthread_t chaos_thread;
    int chaos_started;
    atomic_int run;
    /* counts, for the closing line */
    unsigned long frees, syncs, queries, polls, side_kernels;
    atomic_ulong t_frees, t_syncs, t_queries; /* the chaos thread's */
};

static uint64_t draw(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

static double draw_unit(uint64_t *s)
{
    return (double)(draw(s) >> 11) / (double)(1ull << 53);
}

/* cuMemAlloc + cuMemFree of a scratch buffer: the caching allocator giving memory back. */
static int local_free(struct emu_rank *r, size_t bytes)
{
    CUdeviceptr p = 0;

    if (emu_cu(r, emu_gpu->mem_alloc(&p, bytes), "cuMemAlloc (scratch)"))
        return -1;
    return emu_cu(r, emu_gpu->mem_free(p), "cuMemFree (scratch)");
}

/* A query that may find the call not done yet: only NOT_READY and success are answers. */
static int local_query(struct emu_rank *r, CUevent e)
{
    CUresult rc = emu_gpu->event_query(e);

    return rc == CUDA_ERROR_NOT_READY ? 0 : emu_cu(r, rc, "cuEventQuery");
}

static void *chaos_main(void *p)
{
    struct emu_rank *r = p;
    struct emu_disturb *d = r->disturb;
    uint64_t rng = r->opt->seed * 0x9e3779b97f4a7c15ull + 0x1234567ull * (uint64_t)(r->rank + 1);

    emu_gpu->set_device(r->device);
    while (atomic_load(&d->run)) {
        struct timespec ts = {0, (long)(100000 + draw(&rng) % 1900000)};
        CUevent e;
        nanosleep(&ts, NULL);
        switch (draw(&rng) % 3) {
        case 0:
            if (local_free(r, 64u << 10) == 0)
                atomic_fetch_add(&d->t_frees, 1);
            break;
        case 1:
            if (emu_cu(r, emu_gpu->ctx_sync(), "cuCtxSynchronize (chaos thread)") == 0)
                atomic_fetch_add(&d->t_syncs, 1);
            break;
        default:
            e = atomic_load(&d->recent[draw(&rng) % EMU_RECENT]);
            if (e && local_query(r, e) == 0)
                atomic_fetch_add(&d->t_queries, 1);
            break;
        }
    }
    return NULL;
}

int emu_disturb_init(struct emu_rank *r)
{
    const struct emu_options *o = r->opt;
    struct emu_disturb *d;

    if (!o->nlocal && !o->poll_wait && !o->extra_streams && !(o->chaos > 0))
        return 0;
    if (!(d = calloc(1, sizeof(*d)))) {
        fprintf(stderr, "prophet-emu: rank %d: out of memory\n", r->rank);
        return -1;
    }
    r->disturb = d;
    d->rng = o->seed * 0xbf58476d1ce4e5b9ull + 0x94d049bb133111ebull * (uint64_t)(r->rank + 1);
    for (int i = 0; i < o->extra_streams; i++) {
        if (emu_cu(r, emu_gpu->stream_create(&d->side[i], CU_STREAM_NON_BLOCKING),
                   "cuStreamCreate (extra stream)"))
            return -1;
        d->nside++;
    }
    if (o->chaos > 0) {
        atomic_store(&d->run, 1);
        d->chaos_started = pthread_create(&d->chaos_thread, NULL, chaos_main, r) == 0;
    }
    return 0;
}

int emu_disturb_local(struct emu_rank *r, size_t g)
{
    const struct emu_options *o = r->opt;
    struct emu_disturb *d = r->disturb;

    for (int i = 0; d && i < o->nlocal; i++) {
        const struct emu_local_event *e = &o->local[i];
        if (e->grad != (long)g || (e->rank >= 0 && e->rank != r->rank) || r->iter % e->every)
            continue;
        if (e->kind == EMU_LOCAL_FREE) {
            if (local_free(r, EMU_SCRATCH_BYTES))
                return -1;
            d->frees++;
        } else {
            if (emu_cu(r, emu_gpu->ctx_sync(), "cuCtxSynchronize (local event)"))
                return -1;
            d->syncs++;
        }
    }
    return 0;
}

static int chaos_after_call(struct emu_rank *r, CUevent end)
{
    struct emu_disturb *d = r->disturb;

    if (end) {
        atomic_store(&d->recent[d->recent_next++ % EMU_RECENT], end);
    }
    if (!(draw_unit(&d->rng) < r->opt->chaos))
        return 0;
    switch (draw(&d->rng) % 3) {
    case 0:
        d->frees++;
        return local_free(r, EMU_SCRATCH_BYTES);
    case 1:
        d->syncs++;
        return emu_cu(r, emu_gpu->ctx_sync(), "cuCtxSynchronize (chaos)");
    default:
        if (!end)
            return 0;
        d->queries++;
        return local_query(r, end);
    }
}

/* TORCH_NCCL_BLOCKING_WAIT=1: the host polls the work's end event until it fired. */
static int poll_wait(struct emu_rank *r, CUevent end)
{
    struct timespec ts = {0, 20 * 1000};
    CUresult rc;

    while ((rc = emu_gpu->event_query(end)) == CUDA_ERROR_NOT_READY)
        nanosleep(&ts, NULL);
    r->disturb->polls++;
    return emu_cu(r, rc, "cuEventQuery (polling wait)");
}

int emu_disturb_after_call(struct emu_rank *r, size_t g, CUstream s, CUevent end)
{
    struct emu_disturb *d = r->disturb;

    (void)s;
    if (!d)
        return 0;
    if (r->opt->chaos > 0 && chaos_after_call(r, end))
        return -1;
    if (d->nside && end) {
        CUstream side = d->side[(g == SIZE_MAX ? d->side_kernels : g) % (size_t)d->nside];
        if (emu_cu(r, emu_gpu->stream_wait_event(side, end), "cuStreamWaitEvent (extra stream)") ||
            emu_launch_check(r, g, side))
            return -1;
        d->side_kernels++;
    }
    if (r->opt->poll_wait && end && poll_wait(r, end))
        return -1;
    return 0;
}

int emu_disturb_end_iteration(struct emu_rank *r)
{
    struct emu_disturb *d = r->disturb;

    for (int i = 0; d && i < d->nside; i++)
        if (emu_sync(r, d->side[i]))
            return -1;
    return 0;
}

void emu_disturb_fini(struct emu_rank *r)
{
    struct emu_disturb *d = r->disturb;

    if (!d)
        return;
    if (d->chaos_started) {
        atomic_store(&d->run, 0);
        pthread_join(d->chaos_thread, NULL);
    }
    fprintf(stderr,
            "prophet-emu: rank %d: local events: %lu frees, %lu context synchronisations, %lu "
            "queries after calls; chaos thread: %lu frees, %lu context synchronisations, %lu "
            "queries; %lu polling waits; %lu kernels on %d extra streams\n",
            r->rank, d->frees, d->syncs, d->queries, atomic_load(&d->t_frees),
            atomic_load(&d->t_syncs), atomic_load(&d->t_queries), d->polls, d->side_kernels,
            d->nside);
    for (int i = 0; i < d->nside; i++)
        emu_gpu->stream_destroy(d->side[i]);
    free(d);
    r->disturb = NULL;
}
