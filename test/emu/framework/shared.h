/* Memory shared by the parent and the rank processes (MAP_SHARED, created before fork):
 * per-rank results and the Horovod coordinator's negotiation state. */
#ifndef EMU_SHARED_H
#define EMU_SHARED_H

#include <stdatomic.h>
#include <stdint.h>

#include "options.h"

struct emu_rank_result {
    int finished; /* the rank reached its end, whatever the outcome */
    int ok;
    uint64_t calls_per_iter; /* last iteration */
    uint64_t bytes_per_iter;
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
    struct emu_rank_result result[EMU_MAX_RANKS];
    struct emu_hvd_ctl hvd;
    double iter_us[]; /* [rank * total_iters + iteration] */
};

struct emu_shared *emu_shared_create(int ranks, int total_iters);
void emu_shared_destroy(struct emu_shared *sh);

static inline double *emu_shared_iter_us(struct emu_shared *sh, int rank)
{
    return &sh->iter_us[(size_t)rank * (size_t)sh->total_iters];
}

#endif
