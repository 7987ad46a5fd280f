/* Memory: device memory is host memory. Every allocation is kept in a range table so that frees
 * and pointer queries can be checked and answered. Device memory is heap memory (a sanitizer
 * checks it to the byte), or with EMU_CUDA_IPC_MEM=1 a private anonymous mapping of whole pages,
 * which cuIpcGetMemHandle can share with another process (emu_ipc.c). */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "emu_internal.h"

#define EMU_ALIGN 256

CUresult emu_mem_add(void *p, size_t size, enum emu_mem_kind kind, unsigned flags,
                     struct CUctx_st *ctx, size_t map_size)
{
    struct emu_alloc a = {(uintptr_t)p, size, kind, flags, ctx, emu_next_id(), map_size, -1};
    pthread_mutex_lock(&emu_g.lock);
    int overlap = emu_alloc_find(&emu_g.allocs, a.base) >= 0 ||
                  emu_alloc_find(&emu_g.allocs, a.base + size - 1) >= 0;
    int err = overlap ? 0 : emu_alloc_insert(&emu_g.allocs, &a);
    pthread_mutex_unlock(&emu_g.lock);
    if (overlap)
        return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    return err ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
}

/* Remove the allocation that starts exactly at base and has one of the kinds in mask (a copy of
 * it in *out, when given). */
CUresult emu_mem_remove(uintptr_t base, unsigned kind_mask, struct emu_alloc *out)
{
    CUresult rc = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&emu_g.lock);
    long i = base ? emu_alloc_find(&emu_g.allocs, base) : -1;
    if (i >= 0 && emu_g.allocs.v[i].base == base && ((1u << emu_g.allocs.v[i].kind) & kind_mask)) {
        if (out)
            *out = emu_g.allocs.v[i];
        emu_alloc_remove_at(&emu_g.allocs, (size_t)i);
        rc = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&emu_g.lock);
    return rc;
}

static CUresult emu_mem_alloc(void **out, size_t size, enum emu_mem_kind kind, unsigned flags)
{
    struct CUctx_st *ctx;
    CUresult rc = emu_current_ctx(&ctx);
    if (rc)
        return rc;
    if (!out || !size)
        return CUDA_ERROR_INVALID_VALUE;
    void *p = NULL;
    int mapped = kind == EMU_MEM_DEVICE && emu_g.ipc_mem;
    size_t align = mapped ? (size_t)sysconf(_SC_PAGESIZE) : EMU_ALIGN;
    size_t rounded = (size + align - 1) & ~(align - 1);
    if (rounded < size)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (mapped) {
        p = mmap(NULL, rounded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return CUDA_ERROR_OUT_OF_MEMORY;
    } else if (posix_memalign(&p, EMU_ALIGN, rounded)) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if ((rc = emu_mem_add(p, size, kind, flags, ctx, mapped ? rounded : 0))) {
        if (mapped)
            munmap(p, rounded);
        else
            free(p);
        return rc;
    }
    *out = p;
    return CUDA_SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    void *p = NULL;
    if (!dptr && !emu_check_init())
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = emu_capture_unsafe_call();
    if (rc)
        return rc;
    rc = emu_mem_alloc(&p, bytesize, EMU_MEM_DEVICE, 0);
    if (!rc)
        *dptr = (CUdeviceptr)(uintptr_t)p;
    return rc;
}

/* A free first waits for the context's work (EMU_CUDA_FREE_SYNC=1, the default), as the real
 * driver's cuMemFree and cuMemFreeHost do: work queued behind a gate that never opens makes it
 * hang, as it would on a GPU. A sticky error ends the wait; the memory is freed anyway. */
static void emu_free_sync(void)
{
    if (emu_g.free_sync)
        (void)emu_ctx_sync_current();
}

CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    CUresult rc = emu_check_init();
    if (rc)
        return rc;
    emu_free_sync();
    struct emu_alloc a;
    if ((rc = emu_mem_remove((uintptr_t)dptr, 1u << EMU_MEM_DEVICE, &a)))
        return rc;
    emu_ipc_mem_release(&a);
    if (a.map_size)
        munmap((void *)a.base, a.map_size);
    else
        free((void *)a.base);
    return CUDA_SUCCESS;
}

CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    EMU_FAULT_POINT("cuMemHostAlloc");
    if (Flags & ~(unsigned)(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP |
                            CU_MEMHOSTALLOC_WRITECOMBINED))
        return emu_check_init() ? CUDA_ERROR_NOT_INITIALIZED : CUDA_ERROR_INVALID_VALUE;
    CUresult rc = emu_capture_unsafe_call();
    return rc ? rc : emu_mem_alloc(pp, bytesize, EMU_MEM_HOST, Flags);
}

CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
    CUresult rc = emu_capture_unsafe_call();
    return rc ? rc : emu_mem_alloc(pp, bytesize, EMU_MEM_HOST, 0);
}

CUresult cuMemFreeHost(void *p)
{
    CUresult rc = emu_check_init();
    if (rc)
        return rc;
    emu_free_sync();
    if ((rc = emu_mem_remove((uintptr_t)p, 1u << EMU_MEM_HOST, NULL)))
        return rc;
    free(p);
    return CUDA_SUCCESS;
}

CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
{
    struct CUctx_st *ctx;
    CUresult rc = emu_current_ctx(&ctx);
    if (rc)
        return rc;
    if (!p || !bytesize)
        return CUDA_ERROR_INVALID_VALUE;
    return emu_mem_add(p, bytesize, EMU_MEM_REGISTERED, Flags, ctx, 0);
}

CUresult cuMemHostUnregister(void *p)
{
    CUresult rc = emu_check_init();
    if (rc)
        return rc;
    rc = emu_mem_remove((uintptr_t)p, 1u << EMU_MEM_REGISTERED, NULL);
    return rc ? CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED : CUDA_SUCCESS;
}

/* Copy of the allocation holding addr; CUDA_ERROR_INVALID_VALUE when none. */
static CUresult emu_mem_lookup(uintptr_t addr, struct emu_alloc *out)
{
    CUresult rc = emu_check_init();
    if (rc)
        return rc;
    pthread_mutex_lock(&emu_g.lock);
    long i = emu_alloc_find(&emu_g.allocs, addr);
    if (i >= 0)
        *out = emu_g.allocs.v[i];
    pthread_mutex_unlock(&emu_g.lock);
    return i >= 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* Host memory of this driver is always mapped: the device pointer is the host address. */
CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int Flags)
{
    EMU_FAULT_POINT("cuMemHostGetDevicePointer");
    struct emu_alloc a;
    CUresult rc = emu_mem_lookup((uintptr_t)p, &a);
    if (rc == CUDA_ERROR_NOT_INITIALIZED)
        return rc;
    if (!pdptr || Flags || rc || emu_mem_is_device(a.kind))
        return CUDA_ERROR_INVALID_VALUE;
    *pdptr = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

CUresult cuMemHostGetFlags(unsigned int *pFlags, void *p)
{
    struct emu_alloc a;
    CUresult rc = emu_mem_lookup((uintptr_t)p, &a);
    if (rc == CUDA_ERROR_NOT_INITIALIZED)
        return rc;
    if (!pFlags || rc || emu_mem_is_device(a.kind))
        return CUDA_ERROR_INVALID_VALUE;
    *pFlags = a.flags;
    return CUDA_SUCCESS;
}

CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    struct emu_alloc a;
    CUresult rc = emu_mem_lookup((uintptr_t)dptr, &a);
    if (rc == CUDA_ERROR_NOT_INITIALIZED)
        return rc;
    if (rc || !emu_mem_is_device(a.kind))
        return CUDA_ERROR_NOT_FOUND;
    if (pbase)
        *pbase = (CUdeviceptr)a.base;
    if (psize)
        *psize = a.size;
    return CUDA_SUCCESS;
}

CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total)
{
    struct CUctx_st *ctx;
    CUresult rc = emu_current_ctx(&ctx);
    if (rc)
        return rc;
    size_t used = 0;
    pthread_mutex_lock(&emu_g.lock);
    for (size_t i = 0; i < emu_g.allocs.n; i++)
        if (emu_g.allocs.v[i].kind == EMU_MEM_DEVICE)
            used += emu_g.allocs.v[i].size;
    pthread_mutex_unlock(&emu_g.lock);
    size_t tot = (size_t)80 << 30;
    if (free_bytes)
        *free_bytes = used < tot ? tot - used : 0;
    if (total)
        *total = tot;
    return CUDA_SUCCESS;
}

CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
    struct emu_alloc a;
    CUresult rc = emu_mem_lookup((uintptr_t)ptr, &a);
    if (rc == CUDA_ERROR_NOT_INITIALIZED)
        return rc;
    if (!data)
        return CUDA_ERROR_INVALID_VALUE;
    if (rc)
        return CUDA_ERROR_INVALID_VALUE; /* not memory of this driver */
    switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
        *(CUcontext *)data = a.ctx;
        break;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *(unsigned int *)data =
            emu_mem_is_device(a.kind) ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
        break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        *(CUdeviceptr *)data = ptr;
        break;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        if (emu_mem_is_device(a.kind))
            return CUDA_ERROR_INVALID_VALUE;
        *(void **)data = (void *)(uintptr_t)ptr;
        break;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
        *(unsigned long long *)data = a.id;
        break;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
        *(unsigned int *)data = 0;
        break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        *(int *)data = a.ctx ? a.ctx->dev : 0;
        break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
        *(CUdeviceptr *)data = (CUdeviceptr)a.base;
        break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
        *(size_t *)data = a.size;
        break;
    case CU_POINTER_ATTRIBUTE_MAPPED:
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
        *(int *)data = 1;
        break;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}
