/* The real NCCL's entry points that the preload neither interposes nor has reviewed as harmless
 * (nccl_exports.c). Such an entry point (a collective of a release newer than the preload) reaches
 * NCCL directly: work it enqueues on a stream behind a held call would enter NCCL's queue ahead of
 * that call, which the preload cannot reorder. A process whose NCCL has one holds nothing. */
#ifndef PROPHET_NCCL_EXPORTS_H
#define PROPHET_NCCL_EXPORTS_H

#include <stddef.h>

/* nccl_fn: any function of the loaded libnccl. Returns how many unknown nccl* functions its file
 * exports (their names, comma-separated, in names as far as len allows); -1 when its symbol table
 * cannot be read. */
int prophet_nccl_unknown_exports(const void *nccl_fn, char *names, size_t len);

#endif
