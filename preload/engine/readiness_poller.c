/* The background thread (never the caller) that turns timing events into instants and durations,
 * feeds the learner and the net model, writes log records, reads the live throughput, and warns
 * about held blocks (the stall guard). It never releases anything: releases happen at
 * program-order points only (docs/design.md, "Stall guard"). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/readiness_poller.h"
#include "engine/comm_state.h"
#include "holding/holding.h"
#include "real_libs/cuda_driver.h"
#include "schedule_log/log_bridge.h"
#include "debug_lines/log_line.h"
#include "real_libs/nccl_dtype.h"
#include "config/process_config.h"
#include "prophet/bw.h"

/* Records in flight or a block held: the thread wakes every 5 ms. Nothing it does is urgent:
 * event instants are read from the events themselves, so a record found late loses nothing (what
 * waits is only the events' return to the pool, and the learner's and the fit's samples, which
 * are read at the next agreement); releases happen at program-order points, never here. Each pass
 * is a wake-up, a lock per comm and an event query: at a 0.5 ms period, 2,000 a second a rank
 * (ResNet-50 per-tensor, 8 ranks on 2 cores, a held plan: 6% of the job's CPU and 13% of its
 * voluntary context switches went with them, docs/benchmarks.md). The stall guard's warning
 * (PROPHET_STALL_MS) is then at most a fifth of its bound late: the period is capped at
 * stall_ms / 5. */
#define PROPHET_POLL_BUSY_US 5000
/* Nothing in flight and nothing held on any comm (a passthrough plan, an unsettled comm between
 * its sampled runs): the thread wakes this rarely. Below prophet_poller_stop()'s 50 ms wait for the
 * thread to leave. */
#define PROPHET_POLL_IDLE_US 20000
#define PROPHET_BW_POLL_US 100000

static pthread_t prophet_poller_thread;
static _Atomic int prophet_poller_run;
static _Atomic int prophet_poller_exited;
static _Atomic uint64_t prophet_probe_bits; /* double, -1 when there is no live throughput */
static _Atomic int prophet_probe_wanted;    /* prophet_poller_want_probe() was called */
static int prophet_probe_opened;            /* the poller thread's: prophet_bw_start() ran */
static _Atomic uint64_t prophet_poller_busy_passes; /* passes with work found (records, holds) */
static _Atomic uint64_t prophet_poller_busy_us;     /* the time from those passes to the next */
static prophet_bw_t *prophet_bw;

double prophet_poller_probe_Bps(void)
{
    uint64_t bits = atomic_load(&prophet_probe_bits);
    double v;

    memcpy(&v, &bits, sizeof(v));
    return v;
}

static void prophet_probe_set(double v)
{
    uint64_t bits;

    memcpy(&bits, &v, sizeof(v));
    atomic_store(&prophet_probe_bits, bits);
}

/* Host instant of a fired event: the comm's base event plus the GPU-side elapsed time. */
static int64_t prophet_event_us(const prophet_comm_t *c, CUevent e)
{
    float ms = 0;

    if (!e || prophet_cu.EventElapsedTime(&ms, c->gpu.base_event, e) != CUDA_SUCCESS)
        return 0;
    return c->gpu.base_us + (int64_t)((double)ms * 1000.0);
}

static void prophet_inflight_done(prophet_comm_t *c, prophet_inflight_t *f)
{
    int64_t launch = prophet_event_us(c, f->start), complete = prophet_event_us(c, f->end);
    int64_t last_ready = 0, begin;
    int alive = atomic_load(&c->alive) && c->models.learner;

    for (uint32_t i = 0; i < f->n; i++) {
        const prophet_member_t *m = &f->m[i];
        int64_t ready = prophet_event_us(c, m->ready);

        if (ready > last_ready)
            last_ready = ready;
        /* hold mode: only true readiness samples (schedule.c, measurement iterations) */
        if (alive && ready && m->index != UINT32_MAX &&
            (m->measure || prophet_cfg.gate != PROPHET_GATE_HOLD))
            prophet_learner_set_ready(c->models.learner, m->iteration, m->index, ready);
        if (alive)
            prophet_logb_call(c, f, i, ready, launch, complete);
        prophet_comm_event_put(c, m->ready);
    }
    /* The planners and the simulator charge alpha once per block (one NCCL launch: a fused
     * group), from the moment the block could start, max(last member ready, previous block done),
     * to its completion. Measuring the same span here puts the cost of holding (ready events, the
     * internal stream's handoff) into alpha, where the planner can weigh it against merging. */
    begin =
        last_ready > c->models.net_prev_complete_us ? last_ready : c->models.net_prev_complete_us;
    if (!begin || begin > launch)
        begin = launch;
    if (alive && launch && complete > begin)
        prophet_netmodel_observe(c->models.net, f->bytes, 1, (double)(complete - begin));
    if (complete)
        c->models.net_prev_complete_us = complete;
    if (f->start != f->m[0].ready)
        prophet_comm_event_put(c, f->start);
    prophet_comm_event_put(c, f->end);
}

/* Launched blocks complete in order on X; observed calls' records are on the callers' streams,
 * so the walk stops at the first one not finished (a later one waits for the next pass). */
static void prophet_poll_inflight(prophet_comm_t *c)
{
    prophet_inflight_t *f;

    while ((f = c->blocks.inflight_head) != NULL) {
        CUresult rc = prophet_cu.EventQuery(f->end);
        if (rc == CUDA_ERROR_NOT_READY)
            return;
        c->blocks.inflight_head = f->next;
        if (!c->blocks.inflight_head)
            c->blocks.inflight_tail = NULL;
        if (rc == CUDA_SUCCESS)
            prophet_inflight_done(c, f);
        prophet_comm_record_put(c, f);
    }
}

/* The stall guard: one WARN per held block whose next member is late while the GPU waits for it
 * (a consumer of a held result is queued behind the block's gate: holding/hold_gates.c sets
 * gated_gen). A block that is merely open while the host is between two steps keeps the GPU busy
 * with other work, and is no stall. It only reports; the block is released at the next
 * program-order point like any other. It cannot desynchronise the ranks because it changes nothing
 * that reaches NCCL: a release driven by this rank's clock would group this rank's operations
 * differently from its peers' (NCCL spreads a group's collectives over channels by the group's
 * make-up), which can hang the job. Nor does the host wait on a held block for ever: a host
 * synchronisation on a held result releases its block first on the thread that holds it
 * (holding/hold_sync.c). */
static void prophet_stall_check(prophet_comm_t *c, int64_t now)
{
    const prophet_block_t *b = &c->blocks.pending;
    const prophet_member_t *m;

    if (b->n == 0 || b->stall_warned ||
        now - b->last_arrival_us < (int64_t)prophet_cfg.stall_ms * 1000 ||
        atomic_load_explicit(&c->gated_gen, memory_order_relaxed) != c->gpu.gate_gen + 1)
        return;
    m = &b->m[b->n - 1];
    c->blocks.pending.stall_warned = 1;
    c->stats.stall_warnings++;
    prophet_msg(PROPHET_LOG_WARN,
                "comm %lu iteration %lu: block %u held %ld ms after call #%u (allreduce count=%zu "
                "%s) while the GPU waits for it; waiting for call #%u",
                (unsigned long)c->id, (unsigned long)m->iteration, b->number,
                (long)((now - b->last_arrival_us) / 1000), m->index, m->count,
                prophet_dtype_name(m->dtype), m->index + 1);
}

static void prophet_poll_bw(int64_t now, int64_t *next)
{
    prophet_bw_sample_t s;
    double bps;

    if (!prophet_bw || now < *next)
        return;
    *next = now + PROPHET_BW_POLL_US;
    if (prophet_bw_read(prophet_bw, &s) != 0)
        return;
    bps = s.tx_Bps > s.rx_Bps ? s.tx_Bps : s.rx_Bps;
    prophet_probe_set(bps);
    for (prophet_comm_t *c = prophet_comm_list(); c; c = c->next_all) {
        pthread_mutex_lock(&c->lock);
        if (atomic_load(&c->alive) && c->models.net)
            prophet_netmodel_probe(c->models.net, bps, now);
        pthread_mutex_unlock(&c->lock);
    }
}

static void prophet_bw_start(void)
{
    char why[256] = "built without libbpf";
    PROPHET_BW_OPTS(opts, .mode = (int)prophet_cfg.bwmon | PROPHET_BW_OPEN_ONLY_PID,
                    .pin_dir = prophet_cfg.bwmon_pin);

    prophet_bw = prophet_bw_open(&opts, why, sizeof(why));
    if (prophet_bw) {
        prophet_msg(PROPHET_LOG_INFO, "eBPF throughput from %s",
                    prophet_bw_source_name(prophet_bw_source(prophet_bw)));
        return;
    }
    prophet_msg(PROPHET_LOG_INFO,
                "no eBPF throughput (%s); using bandwidth fitted from NCCL "
                "operations",
                why);
}

/* How long the thread sleeps after a pass (busy: it found records in flight or a block held). */
static long prophet_poll_period_us(int busy)
{
    long stall_cap = (long)prophet_cfg.stall_ms * 1000L / 5;

    if (!busy)
        return PROPHET_POLL_IDLE_US;
    return stall_cap < PROPHET_POLL_BUSY_US ? stall_cap : PROPHET_POLL_BUSY_US;
}

double prophet_poller_busy_hz(void)
{
    uint64_t n = atomic_load_explicit(&prophet_poller_busy_passes, memory_order_relaxed);
    uint64_t us = atomic_load_explicit(&prophet_poller_busy_us, memory_order_relaxed);

    return us ? (double)n * 1e6 / (double)us : 0.0;
}

void prophet_poller_want_probe(void)
{
    atomic_store_explicit(&prophet_probe_wanted, 1, memory_order_relaxed);
}

static void *prophet_poller_main(void *arg)
{
    struct timespec ts = {0, 0};
    int64_t next_bw = 0;
    int relaxed = 0;

    (void)arg;
    prophet_hold_enter(); /* this thread runs only the preload's own CUDA calls */
    while (atomic_load(&prophet_poller_run)) {
        int64_t now = prophet_now_us();
        int busy = 0;
        for (prophet_comm_t *c = prophet_comm_list(); c; c = c->next_all) {
            pthread_mutex_lock(&c->lock);
            if (c->setup > 0 && c->gpu.ctx && c->gpu.internal_stream) {
                /* its queries must not invalidate a capture of the job's (cuda_driver.h): set
                 * once, before its first CUDA call (a comm is set up: the driver is loaded) */
                if (!relaxed) {
                    prophet_capture_relax();
                    relaxed = 1;
                }
                prophet_cu.CtxSetCurrent(c->gpu.ctx);
                prophet_poll_inflight(c);
                if (atomic_load(&c->alive))
                    prophet_stall_check(c, now);
                else
                    prophet_comm_gpu_release(c);
            }
            busy |= c->blocks.inflight_head != NULL || c->blocks.pending.n > 0;
            pthread_mutex_unlock(&c->lock);
        }
        if (!prophet_probe_opened &&
            atomic_load_explicit(&prophet_probe_wanted, memory_order_relaxed)) {
            /* here, not on a caller's thread: loading takes tens of milliseconds. An exit meanwhile
             * stops waiting after 50 ms and tears the comms down: the loop's condition is checked
             * again before anything else, so the thread leaves without touching them (the probe
             * it opened is then not closed: a shared one's pins go stale, and the next owner
             * removes them, as after a crash; bpf/README.md) */
            if (atomic_load(&prophet_poller_run))
                prophet_bw_start();
            prophet_probe_opened = 1;
            continue;
        }
        prophet_poll_bw(now, &next_bw);
        ts.tv_nsec = prophet_poll_period_us(busy) * 1000L;
        nanosleep(&ts, NULL);
        if (busy) {
            atomic_fetch_add_explicit(&prophet_poller_busy_passes, 1, memory_order_relaxed);
            atomic_fetch_add_explicit(&prophet_poller_busy_us, (uint64_t)(prophet_now_us() - now),
                                      memory_order_relaxed);
        }
    }
    atomic_store(&prophet_poller_exited, 1);
    return NULL;
}

void prophet_poller_collect(prophet_comm_t *c)
{
    CUcontext prev = NULL;
    CUstreamCaptureMode mode;

    if (!c->gpu.ctx || prophet_cu.CtxGetCurrent(&prev) != CUDA_SUCCESS)
        return;
    if (prev != c->gpu.ctx && prophet_cu.CtxSetCurrent(c->gpu.ctx) != CUDA_SUCCESS)
        return;
    mode = prophet_capture_relax(); /* the caller's thread: its mode is put back */
    prophet_poll_inflight(c);
    prophet_capture_restore(mode);
    if (prev != c->gpu.ctx)
        prophet_cu.CtxSetCurrent(prev); /* the caller's thread keeps its own context */
}

int prophet_poller_start(void)
{
    pthread_attr_t attr;
    int rc;

    prophet_probe_set(-1);
    atomic_store(&prophet_poller_run, 1);
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    rc = pthread_create(&prophet_poller_thread, &attr, prophet_poller_main, NULL);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        atomic_store(&prophet_poller_run, 0);
        return -rc;
    }
    return 0;
}

/* At exit: the thread leaves its loop before CUDA and NCCL are torn down (waits <= 50 ms). */
void prophet_poller_stop(void)
{
    struct timespec ts = {0, 100000};

    if (!atomic_exchange(&prophet_poller_run, 0))
        return;
    for (int i = 0; i < 500 && !atomic_load(&prophet_poller_exited); i++)
        nanosleep(&ts, NULL);
    if (atomic_load(&prophet_poller_exited) && prophet_bw) { /* written by the thread */
        prophet_bw_close(prophet_bw); /* the host's shared probe: hands it on to another rank */
        prophet_bw = NULL;
    }
}
