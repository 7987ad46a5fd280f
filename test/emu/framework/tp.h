/* --tp-comm: a second, tensor-parallel communicator whose small all-reduces run on the compute
 * stream in the middle of forward and backward, each read and checked by the next compute kernel
 * (Megatron's row-parallel layers). */
#ifndef EMU_TP_H
#define EMU_TP_H

#include <cuda.h>
#include <nccl.h>
#include <stddef.h>
#include <stdint.h>

struct emu_rank;

enum emu_tp_phase { EMU_TP_FORWARD = 0, EMU_TP_BACKWARD };

/* Splits the gradients' communicator (every rank, one colour) and allocates the activation buffer
 * (nothing without --tp-comm). -1 on failure. */
int emu_tp_init(struct emu_rank *r);

/* After the layer kernel at position pos (0-based, in launch order) of the forward or backward
 * pass: this layer's share of the pass's all-reduces, each as fill kernel, ncclAllReduce on the
 * compute stream, check kernel. */
int emu_tp_after_layer(struct emu_rank *r, enum emu_tp_phase phase, size_t pos);

/* The TP communicator, or NULL. */
ncclComm_t emu_tp_comm(const struct emu_rank *r);

/* What the check kernel gets by value (cuLaunchKernel copies it at launch). */
struct emu_tp_check {
    struct emu_rank *r;
    const float *d;
    uint64_t n;
    float base_sum; /* element i must be base_sum + nranks * (i mod EMU_FILL_PERIOD) */
    int iter;
    int call;
};

/* The check kernel ("tp_check" of the framework's module): one struct emu_tp_check by value. */
void emu_tp_check_kernel(void **params);

/* Puts the counts of issued and checked calls into the rank's shared result. */
void emu_tp_report(struct emu_rank *r);

void emu_tp_fini(struct emu_rank *r);

#endif
