/* Memory shared by the parent and the rank processes (MAP_SHARED, created before fork):
 * per-rank results and the Horovod coordinator's negotiation state. */
#ifndef EMU_SHARED_H
#define EMU_SHARED_H

#include <nccl.h>
#include <stdatomic.h>
#include <stdint.h>

#include "options.h"

/* NCCL calls on one communicator: those that reached the emulated NCCL (emuNccl*Calls; -1 without
 * the hook), in total and after the warm-up iterations, and those the job itself issued. */
struct emu_comm_calls {
    long long allreduce, allreduce_after_warmup;
    long long broadcast, broadcast_after_warmup;
    long long job_allreduce, job_broadcast;
};

enum { EMU_COMM_GRAD = 0, EMU_COMM_TP, EMU_NCOMMS };

struct emu_rank_result {
    int finished; /* the rank reached its end, whatever the outcome */
    int ok;
    uint64_t calls_per_iter; /* last iteration */
    uint64_t bytes_per_iter;
    uint64_t rss_warm_kb;  /* --rss: resident memory after iteration W */
    uint64_t rss_end_kb;   /* --rss: after the last iteration, before teardown */
    uint64_t heap_warm_kb; /* --rss: bytes in use in malloc's heap (mallinfo2) at the same points */
    uint64_t heap_end_kb;
    /* the training-loop extras: calls issued and results checked */
    uint64_t loss_allreduces, loss_checked;
    uint64_t eval_allreduces, eval_checked;
    uint64_t tp_allreduces, tp_checked;
    uint64_t micro_steps;
    int max_run_ahead; /* iterations the host was ahead of the compute stream, at most */
    double drain_us;   /* --wait per-layer/none: the wait for everything after the last iteration */
    struct emu_comm_calls comm[EMU_NCOMMS];
};

/* Horovod negotiation, the emulated controller (Horovod does this over MPI/Gloo). Tensors are
 * numbered globally: seq = iteration * ngrad + g. Each rank publishes how many it has seen ready;
 * rank 0 appends responses [first, end) that every rank executes in order. */
#define EMU_HVD_RING 4096
struct emu_hvd_resp {
    uint64_t first;
    uint64_t end;
};

struct emu_hvd_ctl {
    _Atomic uint64_t ready[EMU_MAX_RANKS];
    _Atomic uint64_t consumed[EMU_MAX_RANKS];
    _Atomic uint64_t nresp;
    struct emu_hvd_resp resp[EMU_HVD_RING];
};

struct emu_shared {
    int ranks;
    int total_iters;
    /* The parent forks the ranks first (while it has no thread, so that no lock of another thread
     * is copied into a child, which an ASan/TSan runtime would need) and only then calls
     * ncclGetUniqueId, whose emulation starts a rendezvous thread; the ranks wait for the id. */
    ncclUniqueId id;
    _Atomic int id_state; /* 0 = not yet, 1 = id is valid, -1 = ncclGetUniqueId failed */
    struct emu_rank_result result[EMU_MAX_RANKS];
    struct emu_hvd_ctl hvd;
    _Atomic uint64_t kill_ns; /* --kill-rank: CLOCK_MONOTONIC ns just before the SIGKILL */
    _Atomic int rss_sampled;  /* --rss: ranks that took their end sample (rank.c) */
    double exit_after_kill_s[EMU_MAX_RANKS]; /* parent: rank exit - kill_ns; -1 = none */
    double iter_us[];                        /* [rank * total_iters + iteration] */
};

struct emu_shared *emu_shared_create(int ranks, int total_iters);
void emu_shared_destroy(struct emu_shared *sh);

static inline double *emu_shared_iter_us(struct emu_shared *sh, int rank)
{
    return &sh->iter_us[(size_t)rank * (size_t)sh->total_iters];
}

#endif
