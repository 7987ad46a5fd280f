/* The process's mode (init.c): lazy initialisation (configuration, NCCL symbols), fork and exit.
 * Calls only leaves; the exit teardown above it is reached through a registered hook. */
#ifndef PROPHET_INIT_H
#define PROPHET_INIT_H

#include <stdatomic.h>

typedef enum prophet_global_mode {
    PROPHET_MODE_UNINIT = 0,
    PROPHET_MODE_PASSTHROUGH, /* disabled, forked child, unsupported NCCL, no CUDA */
    PROPHET_MODE_ACTIVE,
} prophet_global_mode_t;

extern _Atomic int prophet_mode; /* prophet_global_mode_t */

/* Lazy initialisation (no constructor): config, NCCL symbols; returns the mode. Thread-safe. */
int prophet_init(void);
/* Only the first stage, the configuration (once; what the CUDA wrappers need: cuda_hooks.c). */
void prophet_init_config(void);
/* CUDA or threads exist from now on: a forked child passes through. */
void prophet_init_mark_heavy(void);
/* The teardown that init.c's atexit handler runs when the process is active (comm_life.c's). */
void prophet_init_set_exit_hook(void (*fn)(void));

static inline int prophet_active(void)
{
    int m = atomic_load_explicit(&prophet_mode, memory_order_acquire);
    if (m == PROPHET_MODE_UNINIT)
        m = prophet_init();
    return m == PROPHET_MODE_ACTIVE;
}

#endif
