/* Test hooks of the emulated NCCL: not NCCL API, exported as emuNccl* next to it. A program that
 * may also run on the real NCCL looks them up with dlsym (emu_nccl_held() does). */
#ifndef EMU_NCCL_HOOKS_H
#define EMU_NCCL_HOOKS_H

#include <dlfcn.h>
#include <nccl.h>

/* ncclAllReduce calls on comm that reached the library (through any interposer). */
unsigned long long emuNcclAllReduceCalls(ncclComm_t comm);

/* ncclBroadcast (and ncclBcast) calls on comm that reached the library (through any interposer,
 * its own included). */
unsigned long long emuNcclBroadcastCalls(ncclComm_t comm);

/* Sets the paced bandwidth of this process's links from now on (0: unpaced). */
void emuNcclSetLinkBandwidth(double Bps);

/* From now on every pass (one operation or fused group) of this process first sleeps us
 * microseconds, whatever EMU_NCCL_LATENCY_US says. */
void emuNcclSetLatency(long long us);

/* comm fails now, as on a network error found by NCCL's proxy: ncclCommGetAsyncError reports err,
 * its peers fail at their next pass (ncclRemoteError), its pending and later work fails. */
void emuNcclCommInjectError(ncclComm_t comm, ncclResult_t err);

/* All-reduces held by an interposer between the program and NCCL: `issued` calls the program made
 * on comm, `base_issued`/`base_reached` both counts taken right after its first call returned (an
 * interposer may issue its own all-reduces while setting up at that call; none later). -1 when
 * the library has no hook (the real NCCL). */
static inline long long emu_nccl_held(ncclComm_t comm, unsigned long long issued,
                                      unsigned long long base_issued,
                                      unsigned long long base_reached)
{
    unsigned long long (*fn)(ncclComm_t) =
        (unsigned long long (*)(ncclComm_t))dlsym(RTLD_DEFAULT, "emuNcclAllReduceCalls");

    if (!fn)
        return -1;
    return (long long)(issued - base_issued) - (long long)(fn(comm) - base_reached);
}

/* The library's count now (0 without the hook): the base after the program's first call. */
static inline unsigned long long emu_nccl_reached(ncclComm_t comm)
{
    unsigned long long (*fn)(ncclComm_t) =
        (unsigned long long (*)(ncclComm_t))dlsym(RTLD_DEFAULT, "emuNcclAllReduceCalls");

    return fn ? fn(comm) : 0;
}

/* The library's count of all-reduce (broadcast = 0) or broadcast (broadcast = 1) calls on comm
 * that reached it; -1 when the library has no hook (the real NCCL). */
static inline long long emu_nccl_count(ncclComm_t comm, int broadcast)
{
    unsigned long long (*fn)(ncclComm_t) = (unsigned long long (*)(ncclComm_t))dlsym(
        RTLD_DEFAULT, broadcast ? "emuNcclBroadcastCalls" : "emuNcclAllReduceCalls");

    return fn && comm ? (long long)fn(comm) : -1;
}

/* The count kept by a single-threaded caller of one communicator. */
struct emu_held_count {
    ncclComm_t comm;
    unsigned long long issued, base_issued, base_reached;
    int based;
    long long max; /* most held at once after a call returned */
};

/* Held right now (0 before the first call, -1 without the hook). */
static inline long long emu_held_now(const struct emu_held_count *h)
{
    if (!h->based)
        return 0;
    return emu_nccl_held(h->comm, h->issued, h->base_issued, h->base_reached);
}

/* After each ncclAllReduce on h->comm returned. */
static inline void emu_held_note(struct emu_held_count *h)
{
    long long n;

    h->issued++;
    if (!h->based) { /* an interposer sets up (and may all-reduce) inside the first call */
        h->base_issued = h->issued;
        h->base_reached = emu_nccl_reached(h->comm);
        h->based = 1;
        return;
    }
    n = emu_held_now(h);
    if (n > h->max)
        h->max = n;
}

#endif
