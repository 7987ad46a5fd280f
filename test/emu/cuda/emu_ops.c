/* Stream operations: what each one does when its stream's thread reaches it, and the API calls
 * that enqueue them (copies, memsets, host functions, memory waits and writes, kernels). */
#include <stdlib.h>
#include <string.h>

#include "emu_internal.h"

struct emu_op *emu_op_new(enum emu_op_kind kind)
{
    struct emu_op *op = calloc(1, sizeof(*op));
    if (op)
        op->kind = kind;
    return op;
}

void emu_op_free(struct emu_op *op)
{
    if (!op)
        return;
    if ((op->kind == EMU_OP_RECORD || op->kind == EMU_OP_WAIT_EVENT) && op->u.mark.mark)
        emu_mark_put(op->u.mark.mark);
    if (op->kind == EMU_OP_WAIT_SEQ)
        emu_stream_put(op->u.seqw.stream);
    if (op->kind == EMU_OP_LAUNCH)
        free(op->u.launch.params);
    if (op->kind == EMU_OP_WAIT_IPC && op->u.ipcw.ipc)
        emu_ipc_ev_put(op->u.ipcw.ipc);
    free(op);
}

int emu_value_satisfied(uint32_t cur, uint32_t val, unsigned flags)
{
    switch (flags & 0xf) {
    case CU_STREAM_WAIT_VALUE_GEQ:
        return (int32_t)(cur - val) >= 0;
    case CU_STREAM_WAIT_VALUE_EQ:
        return cur == val;
    case CU_STREAM_WAIT_VALUE_AND:
        return (cur & val) != 0;
    case CU_STREAM_WAIT_VALUE_NOR:
        return ~(cur | val) != 0;
    default:
        return 1;
    }
}

static int emu_value_ready(void *arg)
{
    struct emu_op *op = arg;
    uint32_t cur = __atomic_load_n(op->u.value.addr, __ATOMIC_ACQUIRE);
    return emu_value_satisfied(cur, op->u.value.val, op->u.value.flags);
}

static int emu_mark_fired(void *arg)
{
    struct emu_mark *m = arg;
    return atomic_load_explicit(&m->done, memory_order_acquire);
}

static void emu_set32(uint32_t *dst, uint32_t val, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = val;
}

void emu_op_run(struct emu_op *op)
{
    switch (op->kind) {
    case EMU_OP_COPY:
        if (op->u.copy.n)
            memmove(op->u.copy.dst, op->u.copy.src, op->u.copy.n);
        break;
    case EMU_OP_SET8:
        memset(op->u.set.dst, (int)(op->u.set.val & 0xff), op->u.set.n);
        break;
    case EMU_OP_SET32:
        emu_set32(op->u.set.dst, op->u.set.val, op->u.set.n);
        break;
    case EMU_OP_HOST_FN:
        op->u.host.fn(op->u.host.arg);
        break;
    case EMU_OP_CALLBACK:
        op->u.cb.fn(op->u.cb.handle, CUDA_SUCCESS, op->u.cb.arg);
        break;
    case EMU_OP_KERNEL:
        /* The modelled span starts once fn has returned, so everything fn did or observed lies
         * at least ns before the kernel ends and before any event recorded after it fires
         * (fn's own time, long under a sanitizer, is not taken out of ns). */
        if (op->u.kernel.fn)
            op->u.kernel.fn(op->u.kernel.arg);
        if (op->u.kernel.ns)
            emu_sleep_until_ns(emu_now_ns() + op->u.kernel.ns);
        break;
    case EMU_OP_LAUNCH:
        op->u.launch.fn(op->u.launch.params);
        break;
    case EMU_OP_RECORD: {
        struct emu_mark *m = op->u.mark.mark;
        atomic_store_explicit(&m->t_ns, emu_now_ns(), memory_order_relaxed);
        atomic_store_explicit(&m->done, 1, memory_order_release);
        if (m->ipc)
            emu_ipc_ev_fire(m->ipc, m->ipc_seq);
        break; /* the stream loop notifies waiters after every op */
    }
    case EMU_OP_WAIT_IPC:
        emu_ipc_ev_wait(op->u.ipcw.ipc, op->u.ipcw.seq);
        break;
    case EMU_OP_WAIT_EVENT:
        emu_wait(emu_mark_fired, op->u.mark.mark, 0);
        break;
    case EMU_OP_WAIT_VALUE:
        emu_wait(emu_value_ready, op, 1);
        break;
    case EMU_OP_WAIT_SEQ:
        emu_stream_wait_seq(op->u.seqw.stream, op->u.seqw.seq);
        break;
    case EMU_OP_WRITE_VALUE:
        __atomic_store_n(op->u.value.addr, op->u.value.val, __ATOMIC_SEQ_CST);
        break;
    }
}

/* ---- copies and memsets ------------------------------------------------------------------- */

static CUresult emu_copy(void *dst, const void *src, size_t n, CUstream h, int sync)
{
    CUresult rc = emu_check_init();
    if (rc)
        return rc;
    if (n && (!dst || !src))
        return CUDA_ERROR_INVALID_VALUE;
    struct emu_op *op = emu_op_new(EMU_OP_COPY);
    if (!op)
        return CUDA_ERROR_OUT_OF_MEMORY;
    op->u.copy.dst = dst;
    op->u.copy.src = src;
    op->u.copy.n = n;
    return emu_submit_to(h, op, sync);
}

CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)
{
    return emu_copy((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, ByteCount, hStream, 0);
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount,
                              CUstream hStream)
{
    return emu_copy((void *)(uintptr_t)dstDevice, srcHost, ByteCount, hStream, 0);
}

CUresult cuMemcpyDtoHAsync_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                              CUstream hStream)
{
    return emu_copy(dstHost, (const void *)(uintptr_t)srcDevice, ByteCount, hStream, 0);
}

CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
                              CUstream hStream)
{
    return emu_copy((void *)(uintptr_t)dstDevice, (const void *)(uintptr_t)srcDevice, ByteCount,
                    hStream, 0);
}

/* Synchronous copies go through the legacy stream and return when done. */
CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
    return emu_copy((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, ByteCount,
                    CU_STREAM_LEGACY, 1);
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
    return emu_copy((void *)(uintptr_t)dstDevice, srcHost, ByteCount, CU_STREAM_LEGACY, 1);
}

CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
    return emu_copy(dstHost, (const void *)(uintptr_t)srcDevice, ByteCount, CU_STREAM_LEGACY, 1);
}

CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)
{
    return emu_copy((void *)(uintptr_t)dstDevice, (const void *)(uintptr_t)srcDevice, ByteCount,
                    CU_STREAM_LEGACY, 1);
}

static CUresult emu_memset(CUdeviceptr dst, uint32_t val, size_t n, enum emu_op_kind kind,
                           CUstream h, int sync)
{
    CUresult rc = emu_check_init();
    if (rc)
        return rc;
    if (n && !dst)
        return CUDA_ERROR_INVALID_VALUE;
    if (kind == EMU_OP_SET32 && (dst & 3))
        return CUDA_ERROR_INVALID_VALUE;
    struct emu_op *op = emu_op_new(kind);
    if (!op)
        return CUDA_ERROR_OUT_OF_MEMORY;
    op->u.set.dst = (void *)(uintptr_t)dst;
    op->u.set.val = val;
    op->u.set.n = n;
    return emu_submit_to(h, op, sync);
}

CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream)
{
    return emu_memset(dstDevice, uc, N, EMU_OP_SET8, hStream, 0);
}

CUresult cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream)
{
    return emu_memset(dstDevice, ui, N, EMU_OP_SET32, hStream, 0);
}

CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
    return emu_memset(dstDevice, uc, N, EMU_OP_SET8, CU_STREAM_LEGACY, 1);
}

CUresult cuMemsetD32_v2(CUdeviceptr dstDevice, unsigned int ui, size_t N)
{
    return emu_memset(dstDevice, ui, N, EMU_OP_SET32, CU_STREAM_LEGACY, 1);
}

/* ---- host functions and kernels ------------------------------------------------------------ */

CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData)
{
    CUresult rc = emu_check_init();
    if (rc)
        return rc;
    if (!fn)
        return CUDA_ERROR_INVALID_VALUE;
    struct emu_op *op = emu_op_new(EMU_OP_HOST_FN);
    if (!op)
        return CUDA_ERROR_OUT_OF_MEMORY;
    op->u.host.fn = fn;
    op->u.host.arg = userData;
    return emu_submit_to(hStream, op, 0);
}

CUresult cuStreamAddCallback(CUstream hStream, CUstreamCallback callback, void *userData,
                             unsigned int flags)
{
    CUresult rc = emu_check_init();
    if (rc)
        return rc;
    if (!callback || flags)
        return CUDA_ERROR_INVALID_VALUE;
    struct emu_op *op = emu_op_new(EMU_OP_CALLBACK);
    if (!op)
        return CUDA_ERROR_OUT_OF_MEMORY;
    op->u.cb.fn = callback;
    op->u.cb.arg = userData;
    op->u.cb.handle = hStream;
    return emu_submit_to(hStream, op, 0);
}

CUresult emuLaunchKernel(CUstream s, uint64_t duration_ns, void (*fn)(void *), void *arg)
{
    CUresult rc = emu_check_init();
    if (rc)
        return rc;
    struct emu_op *op = emu_op_new(EMU_OP_KERNEL);
    if (!op)
        return CUDA_ERROR_OUT_OF_MEMORY;
    op->u.kernel.fn = fn;
    op->u.kernel.arg = arg;
    op->u.kernel.ns = duration_ns;
    return emu_submit_to(s, op, 0);
}

/* ---- memory operations ---------------------------------------------------------------------- */

/* addr must be 4-byte aligned and inside memory of this driver (cuMemAlloc, cuMemHostAlloc,
 * cuMemHostRegister). */
static CUresult emu_check_value_addr(CUdeviceptr addr)
{
    if (!addr || (addr & 3))
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&emu_g.lock);
    long i = emu_alloc_find(&emu_g.allocs, (uintptr_t)addr);
    int ok = i >= 0 && (uintptr_t)addr + 4 <= emu_g.allocs.v[i].base + emu_g.allocs.v[i].size;
    pthread_mutex_unlock(&emu_g.lock);
    return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* Queues a wait-value or write-value operation on a checked address. */
static CUresult emu_submit_value(CUstream stream, enum emu_op_kind kind, CUdeviceptr addr,
                                 cuuint32_t value, unsigned int flags)
{
    CUresult rc = emu_check_value_addr(addr);
    if (rc)
        return rc;
    struct emu_op *op = emu_op_new(kind);
    if (!op)
        return CUDA_ERROR_OUT_OF_MEMORY;
    op->u.value.addr = (uint32_t *)(uintptr_t)addr;
    op->u.value.val = value;
    op->u.value.flags = flags;
    return emu_submit_to(stream, op, 0);
}

CUresult cuStreamWaitValue32_v2(CUstream stream, CUdeviceptr addr, cuuint32_t value,
                                unsigned int flags)
{
    EMU_FAULT_POINT("cuStreamWaitValue32");
    CUresult rc = emu_check_init();
    if (rc)
        return rc;
    if ((flags & 0xf) > CU_STREAM_WAIT_VALUE_NOR || (flags & ~(0xfu | CU_STREAM_WAIT_VALUE_FLUSH)))
        return CUDA_ERROR_INVALID_VALUE;
    return emu_submit_value(stream, EMU_OP_WAIT_VALUE, addr, value, flags);
}

CUresult cuStreamWriteValue32_v2(CUstream stream, CUdeviceptr addr, cuuint32_t value,
                                 unsigned int flags)
{
    EMU_FAULT_POINT("cuStreamWriteValue32");
    CUresult rc = emu_check_init();
    if (rc)
        return rc;
    if (flags & ~(unsigned)CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER)
        return CUDA_ERROR_INVALID_VALUE;
    return emu_submit_value(stream, EMU_OP_WRITE_VALUE, addr, value, flags);
}

void emuWriteValue32(uint32_t *addr, uint32_t value)
{
    __atomic_store_n(addr, value, __ATOMIC_SEQ_CST);
    emu_notify();
}

/* cuMemBatchDecompressAsync: the emulated "compression" is the identity: each item copies
 * min(srcNumBytes, dstNumBytes) bytes from src to dst in stream order; *dstActBytes gets that
 * count at once (a real driver writes it when the item ran). */
CUresult cuMemBatchDecompressAsync(CUmemDecompressParams *paramsArray, size_t count,
                                   unsigned int flags, size_t *errorIndex, CUstream stream)
{
    CUresult rc = CUDA_SUCCESS;

    if (flags || (count && !paramsArray))
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count && rc == CUDA_SUCCESS; i++) {
        CUmemDecompressParams *p = &paramsArray[i];
        size_t n = p->srcNumBytes < p->dstNumBytes ? p->srcNumBytes : p->dstNumBytes;
        if (!p->src || !p->dst)
            rc = CUDA_ERROR_INVALID_VALUE;
        else
            rc = emu_copy(p->dst, p->src, n, stream, 0);
        if (rc == CUDA_SUCCESS && p->dstActBytes)
            *p->dstActBytes = (cuuint32_t)n;
        if (rc != CUDA_SUCCESS && errorIndex)
            *errorIndex = i;
    }
    return rc;
}
