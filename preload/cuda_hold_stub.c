/* Pass-through holding engine: nothing is ever held, so every CUDA wrapper (cuda_hooks.c) goes
 * straight to the driver. Stands in for cuda_hold.c (docs/completion-holding.md) until that file
 * exists; CMakeLists.txt builds whichever is present. */
#include "cuda_hold.h"

atomic_int prophet_hold_armed_;
_Thread_local int prophet_hold_depth_;

int prophet_hold_event_record(CUevent e, CUstream s, int ptsz, CUresult *rc)
{
    (void)e, (void)s, (void)ptsz, (void)rc;
    return 0;
}

int prophet_hold_stream_wait_event(CUstream s, CUevent e, int ptsz, CUresult *rc)
{
    (void)s, (void)e, (void)ptsz, (void)rc;
    return 0;
}

void prophet_hold_stream_work(CUstream s, int ptsz)
{
    (void)s, (void)ptsz;
}

int prophet_hold_event_query(CUevent e, CUresult *rc)
{
    (void)e, (void)rc;
    return 0;
}

int prophet_hold_stream_query(CUstream s, int ptsz, CUresult *rc)
{
    (void)s, (void)ptsz, (void)rc;
    return 0;
}

int prophet_hold_event_elapsed(CUevent a, CUevent b, CUresult *rc)
{
    (void)a, (void)b, (void)rc;
    return 0;
}

void prophet_hold_event_sync(CUevent e)
{
    (void)e;
}

void prophet_hold_stream_sync(CUstream s, int ptsz)
{
    (void)s, (void)ptsz;
}

void prophet_hold_ctx_sync(void) {}

int prophet_hold_event_destroy(CUevent e, CUresult *rc)
{
    (void)e, (void)rc;
    return 0;
}

int prophet_hold_stream_destroy(CUstream s, CUresult *rc)
{
    (void)s, (void)rc;
    return 0;
}

void prophet_hold_stream_created(CUstream s, unsigned flags)
{
    (void)s, (void)flags;
}
