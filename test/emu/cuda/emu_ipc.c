/* Interprocess events and memory: cuIpcGetEventHandle / cuIpcOpenEventHandle, cuIpcGetMemHandle /
 * cuIpcOpenMemHandle / cuIpcCloseMemHandle, between processes of one host.
 *
 * Both kinds of handle name a memfd of the exporting process, which the importer opens through
 * /proc/<pid>/fd/<fd> (the exporter must still be alive then, as with a real driver) and maps
 * shared:
 * - an event made with CU_EVENT_INTERPROCESS keeps, in one page of its memfd, how many records
 *   were issued (by any process) and the number of the latest that fired (emu_internal.h); the
 *   importer's event maps the same page, so that a record made in either process is seen by
 *   queries, host and stream waits in the other;
 * - device memory made with EMU_CUDA_IPC_MEM=1 (an anonymous private mapping, emu_mem.c; without
 *   it, heap memory: CUDA_ERROR_NOT_SUPPORTED) is moved into a memfd mapped at the same address by
 *   the first cuIpcGetMemHandle of its allocation; the importer maps that memfd. The move copies
 *   the contents: a write by a stream thread to the allocation while the handle is being made may
 *   be lost, so get the handle while no work on the allocation is in flight.
 * A handle opened in the process that made it is refused (CUDA_ERROR_INVALID_CONTEXT). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "emu_internal.h"

#define EMU_IPC_EV_MAGIC 0x3156455043494d45ull  /* "EMICPEV1" */
#define EMU_IPC_MEM_MAGIC 0x314d454d43504945ull /* "EIPCMEM1" */

/* What a CUipcEventHandle / CUipcMemHandle (64 bytes) holds here. */
struct emu_ipc_handle {
    uint64_t magic;
    int32_t pid;
    int32_t fd;
    uint64_t size;
};
_Static_assert(sizeof(struct emu_ipc_handle) <= sizeof(CUipcEventHandle), "event handle");
_Static_assert(sizeof(struct emu_ipc_handle) <= sizeof(CUipcMemHandle), "memory handle");

static size_t emu_page(void)
{
    return (size_t)sysconf(_SC_PAGESIZE);
}

/* Maps the memfd `fd` of process `pid` (size bytes, shared); MAP_FAILED on failure. */
static void *emu_ipc_map_peer(int32_t pid, int32_t fd, size_t size)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, (int)fd);
    int f = open(path, O_RDWR | O_CLOEXEC);
    if (f < 0)
        return MAP_FAILED;
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
    close(f);
    return p;
}

/* ---- events -----------------------------------------------------------------------------------
 */

struct emu_ipc_ev *emu_ipc_ev_new(void)
{
    struct emu_ipc_ev *x = calloc(1, sizeof(*x));
    if (!x)
        return NULL;
    x->fd = memfd_create("emu-cuda-ipc-event", MFD_CLOEXEC);
    if (x->fd < 0 || ftruncate(x->fd, (off_t)emu_page()) != 0)
        goto fail;
    x->sh = mmap(NULL, emu_page(), PROT_READ | PROT_WRITE, MAP_SHARED, x->fd, 0);
    if (x->sh == MAP_FAILED)
        goto fail;
    x->sh->magic = EMU_IPC_EV_MAGIC; /* the page is zero: no record issued, none fired */
    atomic_init(&x->refs, 1);
    return x;
fail:
    if (x->fd >= 0)
        close(x->fd);
    free(x);
    return NULL;
}

void emu_ipc_ev_get(struct emu_ipc_ev *x)
{
    atomic_fetch_add(&x->refs, 1);
}

void emu_ipc_ev_put(struct emu_ipc_ev *x)
{
    if (!x || atomic_fetch_sub(&x->refs, 1) != 1)
        return;
    munmap(x->sh, emu_page());
    if (x->fd >= 0)
        close(x->fd);
    free(x);
}

void emu_ipc_ev_fire(struct emu_ipc_ev *x, uint64_t n)
{
    uint64_t cur = atomic_load(&x->sh->fired);
    while (cur < n && !atomic_compare_exchange_weak(&x->sh->fired, &cur, n))
        ;
}

int emu_ipc_ev_done(struct emu_ipc_ev *x, uint64_t n)
{
    return atomic_load_explicit(&x->sh->fired, memory_order_acquire) >= n;
}

struct emu_ipc_wait {
    struct emu_ipc_ev *x;
    uint64_t n;
};

static int emu_ipc_ev_ready(void *arg)
{
    const struct emu_ipc_wait *w = arg;
    return emu_ipc_ev_done(w->x, w->n);
}

void emu_ipc_ev_wait(struct emu_ipc_ev *x, uint64_t n)
{
    struct emu_ipc_wait w = {x, n};
    /* polled: another process's stream thread fires it, with no wake-up of this process */
    emu_wait(emu_ipc_ev_ready, &w, 1);
}

CUresult emu_ipc_wait_op(struct CUstream_st *s, struct emu_ipc_ev *x)
{
    uint64_t n = atomic_load(&x->sh->recorded);
    if (emu_ipc_ev_done(x, n))
        return CUDA_SUCCESS; /* never recorded, or fired already: nothing to wait for */
    struct emu_op *op = emu_op_new(EMU_OP_WAIT_IPC);
    if (!op)
        return CUDA_ERROR_OUT_OF_MEMORY;
    emu_ipc_ev_get(x);
    op->u.ipcw.ipc = x;
    op->u.ipcw.seq = n;
    CUresult rc = emu_stream_submit(s, op, NULL);
    if (rc)
        emu_op_free(op);
    return rc;
}

CUresult cuIpcGetEventHandle(CUipcEventHandle *pHandle, CUevent event)
{
    struct CUevent_st *e;
    CUresult rc = emu_event_get(event, &e);
    if (rc)
        return rc;
    if (!pHandle || !e->ipc || e->ipc->fd < 0) {
        rc = CUDA_ERROR_INVALID_VALUE; /* not made with CU_EVENT_INTERPROCESS here */
    } else {
        struct emu_ipc_handle h = {EMU_IPC_EV_MAGIC, (int32_t)getpid(), e->ipc->fd, emu_page()};
        memset(pHandle, 0, sizeof(*pHandle));
        memcpy(pHandle->reserved, &h, sizeof(h));
    }
    emu_event_put(e);
    return rc;
}

CUresult cuIpcOpenEventHandle(CUevent *phEvent, CUipcEventHandle handle)
{
    struct CUctx_st *ctx;
    struct emu_ipc_handle h;
    CUresult rc = emu_current_ctx(&ctx);
    if (rc)
        return rc;
    memcpy(&h, handle.reserved, sizeof(h));
    if (!phEvent || h.magic != EMU_IPC_EV_MAGIC || h.size != emu_page())
        return CUDA_ERROR_INVALID_VALUE;
    if (h.pid == (int32_t)getpid())
        return CUDA_ERROR_INVALID_CONTEXT;
    struct emu_ipc_ev *x = calloc(1, sizeof(*x));
    if (!x)
        return CUDA_ERROR_OUT_OF_MEMORY;
    x->fd = -1;
    x->sh = emu_ipc_map_peer(h.pid, h.fd, emu_page());
    if (x->sh == MAP_FAILED || x->sh->magic != EMU_IPC_EV_MAGIC) {
        if (x->sh != MAP_FAILED)
            munmap(x->sh, emu_page());
        free(x);
        return CUDA_ERROR_INVALID_VALUE; /* the exporter is gone, or not an event's handle */
    }
    atomic_init(&x->refs, 1);
    return emu_event_new(CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING, x, phEvent);
}

/* ---- memory -----------------------------------------------------------------------------------
 */

/* Moves allocation a's pages into a memfd mapped at the same address (once). emu_g.lock held. */
static int emu_ipc_mem_share(struct emu_alloc *a)
{
    if (a->ipc_fd >= 0)
        return 0;
    int fd = memfd_create("emu-cuda-ipc-mem", MFD_CLOEXEC);
    if (fd < 0)
        return -1;
    if (ftruncate(fd, (off_t)a->map_size) != 0 ||
        pwrite(fd, (void *)a->base, a->map_size, 0) != (ssize_t)a->map_size ||
        mmap((void *)a->base, a->map_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) ==
            MAP_FAILED) {
        close(fd);
        return -1;
    }
    a->ipc_fd = fd;
    return 0;
}

CUresult cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr)
{
    CUresult rc = emu_check_init();
    if (rc)
        return rc;
    if (!pHandle)
        return CUDA_ERROR_INVALID_VALUE;
    struct emu_ipc_handle h = {EMU_IPC_MEM_MAGIC, (int32_t)getpid(), -1, 0};
    pthread_mutex_lock(&emu_g.lock);
    long i = emu_alloc_find(&emu_g.allocs, (uintptr_t)dptr);
    struct emu_alloc *a = i >= 0 ? &emu_g.allocs.v[i] : NULL;
    if (!a || a->kind != EMU_MEM_DEVICE || a->base != (uintptr_t)dptr)
        rc = CUDA_ERROR_INVALID_VALUE; /* the base of a cuMemAlloc allocation only */
    else if (!a->map_size)
        rc = CUDA_ERROR_NOT_SUPPORTED; /* heap memory: EMU_CUDA_IPC_MEM=1 was not set at cuInit */
    else if (emu_ipc_mem_share(a) != 0)
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    else
        h = (struct emu_ipc_handle){EMU_IPC_MEM_MAGIC, (int32_t)getpid(), a->ipc_fd, a->size};
    pthread_mutex_unlock(&emu_g.lock);
    if (!rc) {
        memset(pHandle, 0, sizeof(*pHandle));
        memcpy(pHandle->reserved, &h, sizeof(h));
    }
    return rc;
}

void emu_ipc_mem_release(const struct emu_alloc *a)
{
    if (a->ipc_fd >= 0)
        close(a->ipc_fd); /* the importers' mappings keep the memory */
}

CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags)
{
    struct CUctx_st *ctx;
    struct emu_ipc_handle h;
    CUresult rc = emu_current_ctx(&ctx);
    if (rc)
        return rc;
    memcpy(&h, handle.reserved, sizeof(h));
    if (!pdptr || (Flags & ~(unsigned)CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) ||
        h.magic != EMU_IPC_MEM_MAGIC || !h.size)
        return CUDA_ERROR_INVALID_VALUE;
    if (h.pid == (int32_t)getpid())
        return CUDA_ERROR_INVALID_CONTEXT;
    size_t map = (h.size + emu_page() - 1) & ~(emu_page() - 1);
    void *p = emu_ipc_map_peer(h.pid, h.fd, map);
    if (p == MAP_FAILED)
        return CUDA_ERROR_INVALID_VALUE; /* the exporter is gone, or freed the allocation */
    if ((rc = emu_mem_add(p, h.size, EMU_MEM_IPC, 0, ctx, map))) {
        munmap(p, map);
        return rc;
    }
    *pdptr = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

CUresult cuIpcCloseMemHandle(CUdeviceptr dptr)
{
    struct emu_alloc a;
    CUresult rc = emu_check_init();
    if (rc)
        return rc;
    if ((rc = emu_mem_remove((uintptr_t)dptr, 1u << EMU_MEM_IPC, &a)))
        return rc;
    munmap((void *)a.base, a.map_size);
    return CUDA_SUCCESS;
}
