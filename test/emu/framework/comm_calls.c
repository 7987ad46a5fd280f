/* Counting the NCCL calls per communicator (see comm_calls.h). */
#include "comm_calls.h"

#include <stdio.h>

#include "emu_nccl_hooks.h"
#include "rank.h"
#include "tp.h"

static const char *const comm_name[EMU_NCOMMS] = {"grad", "tp"};

static ncclComm_t comm_of(const struct emu_rank *r, int c)
{
    return c == EMU_COMM_GRAD ? r->comm : emu_tp_comm(r);
}

void emu_comm_calls_begin(struct emu_rank *r)
{
    for (int c = 0; c < EMU_NCOMMS; c++) {
        r->calls_base[c][0] = emu_nccl_count(comm_of(r, c), 0);
        r->calls_base[c][1] = emu_nccl_count(comm_of(r, c), 1);
    }
}

/* Calls after the warm-up: -1 when the library has no hook. */
static long long after(long long total, long long base)
{
    return total < 0 || base < 0 ? -1 : total - base;
}

static void print_comm(const struct emu_rank *r, int c, const struct emu_comm_calls *k)
{
    fprintf(stderr,
            "prophet-emu: rank %d: comm %s: %lld all-reduce(s) reached NCCL (%lld after warm-up), "
            "%lld broadcast(s) (%lld after warm-up); the job issued %lld all-reduce(s), %lld "
            "broadcast(s)\n",
            r->rank, comm_name[c], k->allreduce, k->allreduce_after_warmup, k->broadcast,
            k->broadcast_after_warmup, k->job_allreduce, k->job_broadcast);
}

void emu_comm_calls_end(struct emu_rank *r)
{
    struct emu_rank_result *res = &r->sh->result[r->rank];

    for (int c = 0; c < EMU_NCOMMS; c++) {
        struct emu_comm_calls *k = &res->comm[c];
        if (!comm_of(r, c))
            continue;
        k->allreduce = emu_nccl_count(comm_of(r, c), 0);
        k->broadcast = emu_nccl_count(comm_of(r, c), 1);
        k->allreduce_after_warmup = after(k->allreduce, r->calls_base[c][0]);
        k->broadcast_after_warmup = after(k->broadcast, r->calls_base[c][1]);
        k->job_allreduce = c == EMU_COMM_GRAD ? (long long)atomic_load(&r->ar_issued)
                                              : (long long)res->tp_allreduces;
        k->job_broadcast = c == EMU_COMM_GRAD ? (long long)r->bc_issued : 0;
        print_comm(r, c, k);
    }
}
