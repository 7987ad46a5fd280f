/* Result checks of the preload tests: a host function enqueued on the stream compares a buffer
 * with the value every element must hold, and counts checks and wrong buffers. */
#ifndef PT_CHECK_H
#define PT_CHECK_H

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "pt_common.h"

struct pt_check {
    const float *buf;
    size_t count;
    float expect;
};

static atomic_long pt_errors, pt_checks;

/* CUhostFn: arg is a struct pt_check. */
static inline void pt_check_fn(void *arg)
{
    const struct pt_check *c = arg;

    for (size_t i = 0; i < c->count; i++)
        if (c->buf[i] != c->expect) {
            atomic_fetch_add(&pt_errors, 1);
            break;
        }
    atomic_fetch_add(&pt_checks, 1);
}

/* Sets the n floats at b to v, in order on stream s. */
static inline void pt_fill(CUdeviceptr b, float v, size_t n, CUstream s)
{
    uint32_t bits;

    memcpy(&bits, &v, sizeof(bits));
    PT_CU(cuMemsetD32Async(b, bits, n, s));
}

/* Prints this rank's counts; 0 when no check failed and `expect` checks ran. */
static inline int pt_check_report(int rank, long expect)
{
    long checks = atomic_load(&pt_checks), errors = atomic_load(&pt_errors);

    printf("rank %d: %ld checks, %ld wrong\n", rank, checks, errors);
    fflush(stdout);
    return errors == 0 && checks == expect ? 0 : 1;
}

#endif
