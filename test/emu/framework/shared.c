/* Creation of the parent/rank shared memory. */
#include "shared.h"

#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

static size_t shared_size(int ranks, int total_iters)
{
    return sizeof(struct emu_shared) + sizeof(double) * (size_t)ranks * (size_t)total_iters;
}

struct emu_shared *emu_shared_create(int ranks, int total_iters)
{
    struct emu_shared *sh;

    sh = mmap(NULL, shared_size(ranks, total_iters), PROT_READ | PROT_WRITE,
              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) {
        perror("prophet-emu: mmap");
        return NULL;
    }
    memset(sh, 0, shared_size(ranks, total_iters));
    sh->ranks = ranks;
    sh->total_iters = total_iters;
    return sh;
}

void emu_shared_destroy(struct emu_shared *sh)
{
    if (sh)
        munmap(sh, shared_size(sh->ranks, sh->total_iters));
}
