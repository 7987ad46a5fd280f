/* Waiting: one process-wide futex epoch that every state change bumps. Waiters re-check their
 * predicate after each bump; predicates on memory that host code may write with plain stores
 * are also re-checked on a timer (poll). */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "emu_internal.h"

#define EMU_POLL_START_US 20u
#define EMU_SAFETY_TIMEOUT_US 5000u

static _Atomic uint32_t emu_epoch;
static atomic_int emu_waiters;

uint64_t emu_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void emu_sleep_until_ns(uint64_t deadline_ns)
{
    struct timespec ts = {.tv_sec = (time_t)(deadline_ns / 1000000000ull),
                          .tv_nsec = (long)(deadline_ns % 1000000000ull)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

void emu_notify(void)
{
    atomic_fetch_add(&emu_epoch, 1);
    if (atomic_load(&emu_waiters) > 0)
        syscall(SYS_futex, (uint32_t *)&emu_epoch, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

static void emu_futex_wait(uint32_t seen, unsigned timeout_us)
{
    struct timespec ts = {.tv_sec = timeout_us / 1000000u,
                          .tv_nsec = (long)(timeout_us % 1000000u) * 1000};
    syscall(SYS_futex, (uint32_t *)&emu_epoch, FUTEX_WAIT_PRIVATE, seen, &ts, NULL, 0);
}

void emu_wait(emu_pred_fn pred, void *arg, int poll)
{
    unsigned poll_us = EMU_POLL_START_US;
    unsigned cap = emu_g.poll_cap_us ? emu_g.poll_cap_us : 200u;

    for (;;) {
        /* Announce first, then read the epoch, then test: a notifier that changes state after the
         * test bumps the epoch after our read, so the futex wait returns at once. */
        atomic_fetch_add(&emu_waiters, 1);
        uint32_t seen = atomic_load(&emu_epoch);
        if (pred(arg) || emu_sticky() != CUDA_SUCCESS) {
            atomic_fetch_sub(&emu_waiters, 1);
            return;
        }
        emu_futex_wait(seen, poll ? poll_us : EMU_SAFETY_TIMEOUT_US);
        atomic_fetch_sub(&emu_waiters, 1);
        if (poll && poll_us < cap)
            poll_us = poll_us * 2 > cap ? cap : poll_us * 2;
    }
}

void emu_wait_reset_after_fork(void)
{
    atomic_store(&emu_waiters, 0);
}
