/* The NCCL API of the emulated libnccl.so.2: argument checks, groups, enqueue on streams.
 *
 * Every function is defined as pnccl* (strong, exported) with a weak nccl* alias, like the real
 * library. A group (or a single call) becomes one emu_work per communicator, launched with
 * cuLaunchHostFunc on the stream of the communicator's first operation in the group; stream work
 * of one communicator runs in enqueue order (tickets). */
#include "emu_cudrv.h"
#include "emu_dtype.h"
#include "emu_nccl.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define EMU_ALIAS(name)                                                                            \
    extern __typeof(p##name) name __attribute__((weak, alias("p" #name), visibility("default")))

static pthread_mutex_t last_error_mu = PTHREAD_MUTEX_INITIALIZER;
static char last_error[512];

void emu_set_last_error(const char *fmt, ...)
{
    va_list ap;

    pthread_mutex_lock(&last_error_mu);
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof(last_error), fmt, ap);
    va_end(ap);
    pthread_mutex_unlock(&last_error_mu);
}

/* Per-thread group state. */
struct emu_group {
    int depth;
    struct emu_op *ops;
    int nops, cap;
    struct emu_comm **inits; /* communicators initialised inside the group */
    int ninits;
    ncclResult_t err; /* first error of a call in the group */
};
static __thread struct emu_group group;

/* The release it stands for: nccl.h's, or (the "newer" build, EMU_NCCL_NEWER) a later one. */
#ifdef EMU_NCCL_NEWER
#define EMU_NCCL_VERSION_CODE EMU_NCCL_NEWER
#else
#define EMU_NCCL_VERSION_CODE NCCL_VERSION_CODE
#endif

EMU_API ncclResult_t pncclGetVersion(int *version)
{
    if (!version)
        return ncclInvalidArgument;
    *version = EMU_NCCL_VERSION_CODE;
    return ncclSuccess;
}
EMU_ALIAS(ncclGetVersion);

EMU_API const char *pncclGetErrorString(ncclResult_t result)
{
    switch (result) {
    case ncclSuccess:
        return "no error";
    case ncclUnhandledCudaError:
        return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError:
        return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError:
        return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument:
        return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage:
        return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError:
        return "remote process exited or there was a network error";
    case ncclInProgress:
        return "NCCL operation in progress";
    default:
        return "unknown result code";
    }
}
EMU_ALIAS(ncclGetErrorString);

EMU_API const char *pncclGetLastError(ncclComm_t comm)
{
    (void)comm;
    return last_error;
}
EMU_ALIAS(ncclGetLastError);

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
EMU_API void pncclResetDebugInit(void) {}
EMU_ALIAS(ncclResetDebugInit);
#pragma GCC diagnostic pop

EMU_API ncclResult_t pncclGetUniqueId(ncclUniqueId *uniqueId)
{
    struct emu_id id;
    ncclResult_t rc;

    if (!uniqueId)
        return ncclInvalidArgument;
    rc = emu_rendezvous_root_start(&id);
    if (rc != ncclSuccess)
        return rc;
    memset(uniqueId, 0, sizeof(*uniqueId));
    memcpy(uniqueId->internal, &id, sizeof(id));
    return ncclSuccess;
}
EMU_ALIAS(ncclGetUniqueId);

static int current_device(void)
{
    CUdevice dev = 0;
    const struct emu_cudrv *d = emu_cudrv();
    if (!d || d->cuCtxGetDevice(&dev) != CUDA_SUCCESS)
        return 0;
    return (int)dev;
}

static ncclResult_t check_config(const ncclConfig_t *config, int *blocking)
{
    *blocking = 1;
    if (!config)
        return ncclSuccess;
    if (config->magic != 0xcafebeef || config->size < offsetof(ncclConfig_t, cgaClusterSize)) {
        emu_set_last_error("emu-nccl: config not initialised with NCCL_CONFIG_INITIALIZER");
        return ncclInvalidArgument;
    }
    if (config->blocking != NCCL_CONFIG_UNDEF_INT)
        *blocking = config->blocking != 0;
    return ncclSuccess;
}

static ncclResult_t init_rank(ncclComm_t *newcomm, int nranks, const ncclUniqueId *commId, int rank,
                              int blocking, int device)
{
    struct emu_id id;
    struct emu_comm *c = NULL;
    ncclResult_t rc;
    int in_group = group.depth > 0;

    if (!newcomm || !commId)
        return ncclInvalidArgument;
    *newcomm = NULL;
    if (nranks < 1 || rank < 0 || rank >= nranks) {
        emu_set_last_error("emu-nccl: invalid rank %d of %d", rank, nranks);
        return ncclInvalidArgument;
    }
    memcpy(&id, commId->internal, sizeof(id));
    if (id.magic != EMU_ID_MAGIC) {
        emu_set_last_error("emu-nccl: unique id not made by this library's ncclGetUniqueId");
        return ncclInvalidArgument;
    }
    /* Inside a group the init completes at ncclGroupEnd (several ranks from one thread). */
    rc = emu_comm_create(&c, nranks, rank, &id, blocking && !in_group, device);
    if (rc != ncclSuccess && rc != ncclInProgress)
        return rc;
    c->blocking = blocking;
    *newcomm = c;
    if (in_group && blocking) {
        struct emu_comm **n = realloc(group.inits, (size_t)(group.ninits + 1) * sizeof(*n));
        if (!n)
            return ncclSystemError;
        group.inits = n;
        group.inits[group.ninits++] = c;
        return ncclSuccess;
    }
    return rc;
}

EMU_API ncclResult_t pncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId,
                                             int rank, ncclConfig_t *config)
{
    int blocking;
    ncclResult_t rc = check_config(config, &blocking);

    if (rc != ncclSuccess)
        return rc;
    return init_rank(comm, nranks, &commId, rank, blocking, current_device());
}
EMU_ALIAS(ncclCommInitRankConfig);

EMU_API ncclResult_t pncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank)
{
    EMU_NCCL_FAULT_POINT("ncclCommInitRank");
    return init_rank(comm, nranks, &commId, rank, 1, current_device());
}
EMU_ALIAS(ncclCommInitRank);

EMU_API ncclResult_t pncclCommInitRankScalable(ncclComm_t *newcomm, int nranks, int myrank, int nId,
                                               ncclUniqueId *commIds, ncclConfig_t *config)
{
    int blocking;
    ncclResult_t rc = check_config(config, &blocking);

    if (rc != ncclSuccess)
        return rc;
    if (nId < 1 || !commIds)
        return ncclInvalidArgument;
    return init_rank(newcomm, nranks, &commIds[0], myrank, blocking, current_device());
}
EMU_ALIAS(ncclCommInitRankScalable);

EMU_API ncclResult_t pncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist)
{
    ncclUniqueId uid;
    struct emu_id id;
    ncclResult_t rc;

    if (!comms || ndev < 1)
        return ncclInvalidArgument;
    rc = pncclGetUniqueId(&uid);
    if (rc != ncclSuccess)
        return rc;
    memcpy(&id, uid.internal, sizeof(id));
    for (int i = 0; i < ndev; i++) {
        comms[i] = NULL;
        rc = emu_comm_create(&comms[i], ndev, i, &id, 0, devlist ? devlist[i] : i);
        if (rc != ncclInProgress)
            goto fail;
    }
    for (int i = 0; i < ndev; i++) {
        comms[i]->blocking = 1;
        rc = emu_wait_ready(comms[i]);
        if (rc != ncclSuccess)
            goto fail;
    }
    return ncclSuccess;
fail:
    for (int i = 0; i < ndev; i++) {
        if (comms[i]) {
            emu_wait_ready(comms[i]);
            emu_comm_put(comms[i]);
            comms[i] = NULL;
        }
    }
    return rc == ncclSuccess || rc == ncclInProgress ? ncclSystemError : rc;
}
EMU_ALIAS(ncclCommInitAll);

EMU_API ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                                    ncclConfig_t *config)
{
    int blocking;
    ncclResult_t rc;

    if (!comm || !newcomm)
        return ncclInvalidArgument;
    if (color < 0 && color != NCCL_SPLIT_NOCOLOR)
        return ncclInvalidArgument;
    rc = check_config(config, &blocking);
    if (rc != ncclSuccess)
        return rc;
    rc = emu_wait_ready(comm);
    if (rc != ncclSuccess)
        return rc;
    rc = emu_comm_split(comm, color, key, newcomm, blocking);
    if (rc == ncclSuccess && *newcomm)
        (*newcomm)->blocking = blocking;
    return rc;
}
EMU_ALIAS(ncclCommSplit);

/* Emulated as a split (colour 0 for the kept ranks, key = rank). Unlike NCCL, every rank of the
 * parent must call it, the excluded ones too (they get NULL): the split's host exchange goes
 * round all of them. NCCL_SHRINK_ABORT aborts the parent's pending work first. */
EMU_API ncclResult_t pncclCommShrink(ncclComm_t comm, int *excludeRanksList, int excludeRanksCount,
                                     ncclComm_t *newcomm, ncclConfig_t *config, int shrinkFlags)
{
    int color = 0;

    if (!comm || !newcomm || excludeRanksCount < 0 || (excludeRanksCount > 0 && !excludeRanksList))
        return ncclInvalidArgument;
    for (int i = 0; i < excludeRanksCount; i++)
        if (excludeRanksList[i] == comm->rank)
            color = NCCL_SPLIT_NOCOLOR;
    if (shrinkFlags & NCCL_SHRINK_ABORT)
        emu_comm_fail(comm, ncclInvalidUsage);
    return pncclCommSplit(comm, color, comm->rank, newcomm, config);
}
EMU_ALIAS(ncclCommShrink);

/* Revoked: pending work fails, new work is refused (ncclInvalidUsage); the handle stays valid
 * for ncclCommDestroy (or ncclCommShrink), as in NCCL. */
EMU_API ncclResult_t pncclCommRevoke(ncclComm_t comm, int revokeFlags)
{
    uint64_t one = 1;

    if (!comm || revokeFlags != 0)
        return ncclInvalidArgument;
    atomic_store(&comm->aborted, 1);
    emu_comm_fail(comm, ncclInvalidUsage);
    if (write(comm->wake_fd, &one, sizeof(one)) < 0) {
        /* only speeds up the wake-up */
    }
    pthread_mutex_lock(&comm->mu);
    pthread_cond_broadcast(&comm->cv);
    pthread_mutex_unlock(&comm->mu);
    return ncclSuccess;
}
EMU_ALIAS(ncclCommRevoke);

/* The calling thread's CUDA context took a sticky error (a kernel trapped, a fault): its queued
 * work, this library's kernels included, will never run. */
static int ctx_dead(void)
{
    const struct emu_cudrv *d = emu_cudrv();
    CUdevice dev;
    CUresult rc;

    if (!d)
        return 0;
    rc = d->cuCtxGetDevice(&dev);
    return rc == CUDA_ERROR_LAUNCH_FAILED || rc == CUDA_ERROR_ILLEGAL_ADDRESS ||
           rc == CUDA_ERROR_ILLEGAL_INSTRUCTION || rc == CUDA_ERROR_MISALIGNED_ADDRESS ||
           rc == CUDA_ERROR_INVALID_PC || rc == CUDA_ERROR_HARDWARE_STACK_ERROR ||
           rc == CUDA_ERROR_ASSERT;
}

/* Waits until no stream work of c is pending: ncclSuccess, or ncclUnhandledCudaError when the
 * context died with work still queued (it will never run; NCCL's own stream synchronisation
 * gets the sticky error the same way). */
static ncclResult_t wait_idle(struct emu_comm *c)
{
    pthread_mutex_lock(&c->mu);
    while (c->pending > 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 20 * 1000 * 1000;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        if (pthread_cond_timedwait(&c->cv, &c->mu, &ts) != ETIMEDOUT)
            continue;
        pthread_mutex_unlock(&c->mu);
        if (ctx_dead())
            return ncclUnhandledCudaError;
        pthread_mutex_lock(&c->mu);
    }
    pthread_mutex_unlock(&c->mu);
    return ncclSuccess;
}

EMU_API ncclResult_t pncclCommFinalize(ncclComm_t comm)
{
    if (!comm)
        return ncclInvalidArgument;
    emu_wait_ready(comm);
    return wait_idle(comm);
}
EMU_ALIAS(ncclCommFinalize);

EMU_API ncclResult_t pncclCommDestroy(ncclComm_t comm)
{
    ncclResult_t rc;

    if (!comm)
        return ncclSuccess;
    emu_wait_ready(comm);
    rc = wait_idle(comm);
    emu_comm_put(comm); /* with work still queued: freed when it lets go (never, after a trap) */
    return rc;
}
EMU_ALIAS(ncclCommDestroy);

EMU_API ncclResult_t pncclCommAbort(ncclComm_t comm)
{
    uint64_t one = 1;

    if (!comm)
        return ncclSuccess;
    atomic_store(&comm->aborted, 1);
    emu_comm_fail(comm, ncclInvalidUsage);
    if (write(comm->wake_fd, &one, sizeof(one)) < 0) {
        /* the eventfd only speeds up the wake-up; shut sockets do it too */
    }
    pthread_mutex_lock(&comm->mu);
    pthread_cond_broadcast(&comm->cv);
    pthread_mutex_unlock(&comm->mu);
    emu_comm_put(comm); /* freed when the last pending stream work lets go */
    return ncclSuccess;
}
EMU_ALIAS(ncclCommAbort);

EMU_API ncclResult_t pncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError)
{
    int state;

    if (!comm || !asyncError)
        return ncclInvalidArgument;
    pthread_mutex_lock(&comm->mu);
    state = comm->state;
    pthread_mutex_unlock(&comm->mu);
    *asyncError =
        state == EMU_COMM_INIT ? ncclInProgress : (ncclResult_t)atomic_load(&comm->async_err);
    return ncclSuccess;
}
EMU_ALIAS(ncclCommGetAsyncError);

EMU_API ncclResult_t pncclCommCount(const ncclComm_t comm, int *count)
{
    if (!comm || !count)
        return ncclInvalidArgument;
    *count = comm->nranks;
    return ncclSuccess;
}
EMU_ALIAS(ncclCommCount);

EMU_API ncclResult_t pncclCommCuDevice(const ncclComm_t comm, int *device)
{
    if (!comm || !device)
        return ncclInvalidArgument;
    *device = comm->device;
    return ncclSuccess;
}
EMU_ALIAS(ncclCommCuDevice);

EMU_API ncclResult_t pncclCommUserRank(const ncclComm_t comm, int *rank)
{
    if (!comm || !rank)
        return ncclInvalidArgument;
    *rank = comm->rank;
    return ncclSuccess;
}
EMU_ALIAS(ncclCommUserRank);

EMU_API ncclResult_t pncclMemAlloc(void **ptr, size_t size)
{
    CUdeviceptr p = 0;

    if (!ptr)
        return ncclInvalidArgument;
    if (size == 0) {
        *ptr = NULL;
        return ncclSuccess;
    }
    if (!emu_cudrv() || emu_cudrv()->cuMemAlloc(&p, size) != CUDA_SUCCESS)
        return ncclUnhandledCudaError;
    *ptr = (void *)(uintptr_t)p;
    return ncclSuccess;
}
EMU_ALIAS(ncclMemAlloc);

EMU_API ncclResult_t pncclMemFree(void *ptr)
{
    if (ptr &&
        (!emu_cudrv() || emu_cudrv()->cuMemFree((CUdeviceptr)(uintptr_t)ptr) != CUDA_SUCCESS))
        return ncclUnhandledCudaError;
    return ncclSuccess;
}
EMU_ALIAS(ncclMemFree);

EMU_API ncclResult_t pncclCommRegister(const ncclComm_t comm, void *buff, size_t size,
                                       void **handle)
{
    (void)size;
    if (!comm || !handle)
        return ncclInvalidArgument;
    *handle = buff ? buff : (void *)comm;
    return ncclSuccess;
}
EMU_ALIAS(ncclCommRegister);

EMU_API ncclResult_t pncclCommDeregister(const ncclComm_t comm, void *handle)
{
    if (!comm || !handle)
        return ncclInvalidArgument;
    return ncclSuccess;
}
EMU_ALIAS(ncclCommDeregister);

EMU_API ncclResult_t pncclCommWindowRegister(ncclComm_t comm, void *buff, size_t size,
                                             ncclWindow_t *win, int winFlags)
{
    (void)buff, (void)size, (void)winFlags;
    if (!comm || !win)
        return ncclInvalidArgument;
    *win = NULL;
    return ncclInvalidUsage;
}
EMU_ALIAS(ncclCommWindowRegister);

EMU_API ncclResult_t pncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win)
{
    (void)win;
    return comm ? ncclInvalidUsage : ncclInvalidArgument;
}
EMU_ALIAS(ncclCommWindowDeregister);

/* Custom operations: op ncclNumOps + i is the communicator's premul[i]; an all-reduce,
 * reduce or reduce-scatter with it multiplies each rank's input by the scalar, then sums
 * (emu_ring.c). */
EMU_API ncclResult_t pncclRedOpCreatePreMulSum(ncclRedOp_t *op, void *scalar,
                                               ncclDataType_t datatype,
                                               ncclScalarResidence_t residence, ncclComm_t comm)
{
    ncclResult_t rc = ncclInvalidUsage;

    if (!comm || !op || !scalar || emu_dtype_size(datatype) == 0 ||
        (residence != ncclScalarDevice && residence != ncclScalarHostImmediate))
        return ncclInvalidArgument;
    pthread_mutex_lock(&comm->mu);
    for (int i = 0; i < EMU_MAX_PREMUL; i++) {
        struct emu_premul *p = &comm->premul[i];
        if (p->used)
            continue;
        *p = (struct emu_premul){
            1, (int)datatype, residence == ncclScalarDevice,
            residence == ncclScalarDevice ? 0 : emu_to_double(scalar, datatype), scalar};
        *op = (ncclRedOp_t)(ncclNumOps + i);
        rc = ncclSuccess;
        break;
    }
    pthread_mutex_unlock(&comm->mu);
    if (rc != ncclSuccess)
        emu_set_last_error("emu-nccl: more than %d custom reduction operations", EMU_MAX_PREMUL);
    return rc;
}
EMU_ALIAS(ncclRedOpCreatePreMulSum);

const struct emu_premul *emu_premul_of(struct emu_comm *c, int op)
{
    const struct emu_premul *p = NULL;

    if (!c || op < (int)ncclNumOps || op >= (int)ncclNumOps + EMU_MAX_PREMUL)
        return NULL;
    pthread_mutex_lock(&c->mu);
    if (c->premul[op - ncclNumOps].used)
        p = &c->premul[op - ncclNumOps];
    pthread_mutex_unlock(&c->mu);
    return p;
}

EMU_API ncclResult_t pncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm)
{
    ncclResult_t rc = ncclInvalidArgument;

    if (!comm)
        return ncclInvalidArgument;
    pthread_mutex_lock(&comm->mu);
    if ((int)op >= (int)ncclNumOps && (int)op < (int)ncclNumOps + EMU_MAX_PREMUL &&
        comm->premul[op - ncclNumOps].used) {
        comm->premul[op - ncclNumOps].used = 0;
        rc = ncclSuccess;
    }
    pthread_mutex_unlock(&comm->mu);
    return rc;
}
EMU_ALIAS(ncclRedOpDestroy);

/* ---- stream work ---------------------------------------------------------------------- */

/* comm->launched: link and unlink a non-captured work (c->mu held). */
static void launched_link(struct emu_comm *c, struct emu_work *w)
{
    w->launched_prev = NULL;
    w->launched_next = c->launched;
    if (c->launched)
        c->launched->launched_prev = w;
    c->launched = w;
}

static void launched_unlink(struct emu_comm *c, struct emu_work *w)
{
    if (w->launched_prev)
        w->launched_prev->launched_next = w->launched_next;
    else
        c->launched = w->launched_next;
    if (w->launched_next)
        w->launched_next->launched_prev = w->launched_prev;
}

static void work_host_fn(void *arg)
{
    struct emu_work *w = arg;
    struct emu_comm *c = w->comm;
    ncclResult_t rc = emu_wait_ready(c);
    uint64_t ticket;

    pthread_mutex_lock(&c->mu);
    ticket = w->captured ? c->next_ticket++ : w->ticket;
    if (w->captured)
        c->pending++;
    while (c->now_serving != ticket && !atomic_load(&c->aborted))
        pthread_cond_wait(&c->cv, &c->mu);
    pthread_mutex_unlock(&c->mu);
    if (rc == ncclSuccess && !atomic_load(&c->aborted) &&
        atomic_load(&c->async_err) == ncclSuccess) {
        rc = emu_run_work(w);
        if (rc != ncclSuccess)
            emu_comm_fail(c, rc);
    }
    pthread_mutex_lock(&c->mu);
    c->now_serving++;
    c->pending--;
    if (!w->captured)
        launched_unlink(c, w);
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    if (!w->captured) {
        free(w->ops);
        free(w);
        emu_comm_put(c);
    }
}

static int stream_capturing(CUstream s)
{
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    const struct emu_cudrv *d = emu_cudrv();
    if (!d || d->cuStreamIsCapturing(s, &st) != CUDA_SUCCESS)
        return 0;
    return st == CU_STREAM_CAPTURE_STATUS_ACTIVE;
}

/* Launches the ops of one communicator (ops[0..n) all have comm c) on ops[0].stream. */
static ncclResult_t launch_comm(struct emu_comm *c, const struct emu_op *ops, int n)
{
    struct emu_work *w = calloc(1, sizeof(*w));
    CUstream s = ops[0].stream;

    if (!w || !(w->ops = malloc((size_t)n * sizeof(*ops)))) {
        free(w);
        return ncclSystemError;
    }
    memcpy(w->ops, ops, (size_t)n * sizeof(*ops));
    w->nops = n;
    w->comm = c;
    w->captured = stream_capturing(s);
    pthread_mutex_lock(&c->mu);
    if (w->captured) {
        w->next = c->captured;
        c->captured = w;
    } else {
        w->ticket = c->next_ticket++;
        c->pending++;
        c->refs++;
        launched_link(c, w);
    }
    pthread_mutex_unlock(&c->mu);
    if (emu_cudrv_launch(s, work_host_fn, w) != CUDA_SUCCESS) {
        fprintf(stderr, "emu-nccl: comm 0x%llx rank %d: cuLaunchKernel failed\n",
                (unsigned long long)c->hash, c->rank);
        emu_set_last_error("emu-nccl: cuLaunchKernel failed");
        /* the ticket can never be served: fail the communicator so nothing waits for it */
        atomic_store(&c->aborted, 1);
        emu_comm_fail(c, ncclUnhandledCudaError);
        if (!w->captured) {
            pthread_mutex_lock(&c->mu);
            c->pending--;
            launched_unlink(c, w);
            pthread_cond_broadcast(&c->cv);
            pthread_mutex_unlock(&c->mu);
            free(w->ops);
            free(w);
            emu_comm_put(c);
        }
        return ncclUnhandledCudaError;
    }
    return ncclSuccess;
}

static int stream_index(CUstream *streams, int n, CUstream s)
{
    for (int i = 0; i < n; i++) {
        if (streams[i] == s)
            return i;
    }
    return -1;
}

/* Records an event of the work enqueued so far on s. */
static ncclResult_t mark_stream(CUstream s, CUevent *ev)
{
    const struct emu_cudrv *d = emu_cudrv();

    if (!d || d->cuEventCreate(ev, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)
        return ncclUnhandledCudaError;
    if (d->cuEventRecord(*ev, s) != CUDA_SUCCESS) {
        d->cuEventDestroy(*ev);
        *ev = NULL;
        return ncclUnhandledCudaError;
    }
    return ncclSuccess;
}

/* Makes `waiter` wait for event ev (NULL: nothing to wait for). */
static ncclResult_t wait_mark(CUstream waiter, CUevent ev)
{
    if (ev && emu_cudrv()->cuStreamWaitEvent(waiter, ev, 0) != CUDA_SUCCESS)
        return ncclUnhandledCudaError;
    return ncclSuccess;
}

/* Launches a whole group: one work per communicator, each on the stream of its first operation.
 * Every launch stream first waits for the work enqueued before the group on every stream of the
 * group, and every stream of the group then waits for every launch (as NCCL does). */
static ncclResult_t launch_group(const struct emu_op *ops, int n)
{
    struct emu_op *sorted = malloc((size_t)n * sizeof(*ops));
    CUstream *streams = malloc((size_t)n * sizeof(CUstream));
    CUstream *launch = malloc((size_t)n * sizeof(CUstream));
    CUevent *pre = calloc((size_t)n, sizeof(CUevent)), post;
    char *taken = calloc((size_t)n, 1);
    int nstreams = 0, nlaunch = 0, done = 0;
    ncclResult_t rc = ncclSuccess, r;

    if (!sorted || !streams || !launch || !taken || !pre) {
        rc = ncclSystemError;
        goto out;
    }
    for (int i = 0; i < n; i++) {
        if (stream_index(streams, nstreams, ops[i].stream) < 0)
            streams[nstreams++] = ops[i].stream;
    }
    for (int k = 0; k < nstreams && nstreams > 1; k++) {
        if ((r = mark_stream(streams[k], &pre[k])))
            rc = r;
    }
    /* group by communicator, keeping the call order inside each */
    for (int i = 0; i < n; i++) {
        int m = 0;
        if (taken[i])
            continue;
        for (int k = i; k < n; k++) {
            if (!taken[k] && ops[k].comm == ops[i].comm) {
                sorted[done + m++] = ops[k];
                taken[k] = 1;
            }
        }
        launch[nlaunch] = sorted[done].stream;
        for (int k = 0; k < nstreams && nstreams > 1; k++) {
            if (streams[k] != launch[nlaunch] && (r = wait_mark(launch[nlaunch], pre[k])))
                rc = r;
        }
        r = launch_comm(sorted[done].comm, &sorted[done], m);
        if (r != ncclSuccess)
            rc = r;
        nlaunch++;
        done += m;
    }
    for (int l = 0; l < nlaunch && nstreams > 1; l++) {
        if ((r = mark_stream(launch[l], &post))) {
            rc = r;
            continue;
        }
        for (int k = 0; k < nstreams; k++) {
            if (streams[k] != launch[l] && (r = wait_mark(streams[k], post)))
                rc = r;
        }
        emu_cudrv()->cuEventDestroy(post);
    }
out:
    for (int k = 0; pre && k < nstreams; k++) {
        if (pre[k])
            emu_cudrv()->cuEventDestroy(pre[k]);
    }
    free(pre);
    free(sorted);
    free(streams);
    free(launch);
    free(taken);
    return rc;
}

static ncclResult_t check_op(const struct emu_op *op)
{
    struct emu_comm *c = op->comm;
    ncclResult_t err;

    if (!c) {
        emu_set_last_error("emu-nccl: NULL communicator");
        return ncclInvalidArgument;
    }
    if (emu_dtype_size(op->dtype) == 0) {
        emu_set_last_error("emu-nccl: invalid data type %d", op->dtype);
        return ncclInvalidArgument;
    }
    if (op->redop < 0 ||
        (op->redop >= ncclNumOps &&
         (!emu_premul_of(c, op->redop) || emu_premul_of(c, op->redop)->dtype != op->dtype))) {
        emu_set_last_error("emu-nccl: invalid reduction operation %d", op->redop);
        return ncclInvalidArgument;
    }
    if (op->root < 0 || op->root >= c->nranks) {
        emu_set_last_error("emu-nccl: invalid root/peer %d of %d ranks", op->root, c->nranks);
        return ncclInvalidArgument;
    }
    if (op->count > 0 &&
        (op->type != EMU_OP_RECV && op->type != EMU_OP_BROADCAST && !op->sendbuff)) {
        emu_set_last_error("emu-nccl: NULL send buffer");
        return ncclInvalidArgument;
    }
    if (op->count > 0 && op->type != EMU_OP_SEND && !op->recvbuff &&
        !(op->type == EMU_OP_REDUCE && c->rank != op->root)) {
        emu_set_last_error("emu-nccl: NULL receive buffer");
        return ncclInvalidArgument;
    }
    err = (ncclResult_t)atomic_load(&c->async_err);
    if (err != ncclSuccess || atomic_load(&c->aborted))
        return err != ncclSuccess ? err : ncclInvalidUsage;
    return ncclSuccess;
}

/* Non-blocking communicators report ncclInProgress while their init runs. */
static ncclResult_t progress_of(struct emu_comm *c)
{
    int state;

    if (c->blocking)
        return ncclSuccess;
    pthread_mutex_lock(&c->mu);
    state = c->state;
    pthread_mutex_unlock(&c->mu);
    return state == EMU_COMM_INIT ? ncclInProgress : ncclSuccess;
}

static ncclResult_t enqueue(struct emu_op op)
{
    ncclResult_t rc = check_op(&op);
    const struct emu_premul *pm;
    struct emu_op *n;

    if (rc == ncclSuccess && (pm = emu_premul_of(op.comm, op.redop)) != NULL) {
        op.premul = 1;
        op.premul_scalar = pm->host_scalar;
        op.premul_device_ptr = pm->device ? pm->scalar : NULL;
    }
    if (rc != ncclSuccess) {
        if (group.depth > 0 && group.err == ncclSuccess)
            group.err = rc;
        return rc;
    }
    if (group.depth == 0) {
        rc = launch_group(&op, 1);
        return rc != ncclSuccess ? rc : progress_of(op.comm);
    }
    if (group.nops == group.cap) {
        int cap = group.cap ? group.cap * 2 : 16;
        n = realloc(group.ops, (size_t)cap * sizeof(*n));
        if (!n)
            return ncclSystemError;
        group.ops = n;
        group.cap = cap;
    }
    group.ops[group.nops++] = op;
    return progress_of(op.comm);
}

EMU_API ncclResult_t pncclGroupStart(void)
{
    group.depth++;
    return ncclSuccess;
}
EMU_ALIAS(ncclGroupStart);

EMU_API ncclResult_t pncclGroupEnd(void)
{
    ncclResult_t rc = ncclSuccess, r;
    int inprogress = 0;

    if (group.depth == 0) {
        emu_set_last_error("emu-nccl: ncclGroupEnd without ncclGroupStart");
        return ncclInvalidUsage;
    }
    if (--group.depth > 0)
        return ncclSuccess;
    for (int i = 0; i < group.ninits; i++) {
        r = emu_wait_ready(group.inits[i]);
        if (r != ncclSuccess && rc == ncclSuccess)
            rc = r;
    }
    group.ninits = 0;
    for (int i = 0; i < group.nops; i++)
        inprogress |= progress_of(group.ops[i].comm) == ncclInProgress;
    if (group.nops > 0 && group.err == ncclSuccess) {
        r = launch_group(group.ops, group.nops);
        if (r != ncclSuccess && rc == ncclSuccess)
            rc = r;
    }
    if (group.err != ncclSuccess && rc == ncclSuccess)
        rc = group.err;
    group.err = ncclSuccess;
    group.nops = 0;
    /* launch_group copied the ops: free the thread's array, or a thread that grouped calls
     * would keep it until it exits (no destructor runs for __thread data) */
    free(group.ops);
    group.ops = NULL;
    group.cap = 0;
    if (rc == ncclSuccess && inprogress)
        rc = ncclInProgress;
    return rc;
}
EMU_ALIAS(ncclGroupEnd);

/* As NCCL: ends the group (the depth drops whenever it was > 0, whatever the result), checks
 * simInfo's magic, and launches nothing: the group's operations are dropped, simInfo gets an
 * estimate (1 us per operation). */
EMU_API ncclResult_t pncclGroupSimulateEnd(ncclSimInfo_t *simInfo)
{
    ncclResult_t rc = ncclSuccess;
    int nops;

    if (group.depth == 0) {
        emu_set_last_error("emu-nccl: ncclGroupSimulateEnd without ncclGroupStart");
        return ncclInvalidUsage;
    }
    if (--group.depth > 0)
        return ncclSuccess;
    for (int i = 0; i < group.ninits; i++) {
        ncclResult_t r = emu_wait_ready(group.inits[i]);
        if (r != ncclSuccess && rc == ncclSuccess)
            rc = r;
    }
    group.ninits = 0;
    nops = group.nops;
    if (group.err != ncclSuccess && rc == ncclSuccess)
        rc = group.err;
    group.err = ncclSuccess;
    group.nops = 0;
    free(group.ops);
    group.ops = NULL;
    group.cap = 0;
    if (rc == ncclSuccess && simInfo) {
        if (simInfo->magic != 0x74685283)
            return ncclInvalidArgument;
        simInfo->estimatedTime = 1e-6f * (float)nops;
    }
    return rc;
}
EMU_ALIAS(ncclGroupSimulateEnd);

#define EMU_OP(t, sb, rb, cnt, dt, ro, rt, cm, st)                                                 \
    ((struct emu_op){.type = (t),                                                                  \
                     .sendbuff = (sb),                                                             \
                     .recvbuff = (rb),                                                             \
                     .count = (cnt),                                                               \
                     .dtype = (int)(dt),                                                           \
                     .redop = (int)(ro),                                                           \
                     .root = (rt),                                                                 \
                     .comm = (cm),                                                                 \
                     .stream = (CUstream)(st)})

EMU_API ncclResult_t pncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                                    ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                    cudaStream_t stream)
{
    EMU_NCCL_FAULT_POINT("ncclAllReduce");
    if (comm)
        atomic_fetch_add(&comm->allreduce_calls, 1);
    return enqueue(
        EMU_OP(EMU_OP_ALLREDUCE, sendbuff, recvbuff, count, datatype, op, 0, comm, stream));
}
EMU_ALIAS(ncclAllReduce);

#ifdef EMU_NCCL_NEWER
/* The "newer" build's collective that nccl.h does not declare (a release after the one an
 * interposer was built against): an all-reduce under another name, enqueued on its stream like
 * every collective (a kernel launch through the driver's cuGetProcAddress table). A test calls it
 * through dlsym: an entry point the interposer does not know must stay exact behind held calls. */
EMU_API ncclResult_t pncclAllReduceFuture(const void *sendbuff, void *recvbuff, size_t count,
                                          ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                          cudaStream_t stream)
{
    return enqueue(
        EMU_OP(EMU_OP_ALLREDUCE, sendbuff, recvbuff, count, datatype, op, 0, comm, stream));
}
EMU_ALIAS(ncclAllReduceFuture);
#endif

/* Test hook, not NCCL API (test/emu/nccl/emu_nccl_hooks.h): how many ncclAllReduce calls on comm
 * reached this library. A test compares it with the calls it issued through an interposer: the
 * difference is what the interposer holds. */
EMU_API unsigned long long emuNcclAllReduceCalls(ncclComm_t comm)
{
    return comm ? atomic_load(&comm->allreduce_calls) : 0;
}

/* Test hook, not NCCL API (test/emu/nccl/emu_nccl_hooks.h): how many ncclBroadcast (and ncclBcast)
 * calls on comm reached this library. An interposer may issue broadcasts of its own on a job's
 * communicator (plan agreement): prophet-emu reports this count per communicator. */
EMU_API unsigned long long emuNcclBroadcastCalls(ncclComm_t comm)
{
    return comm ? atomic_load(&comm->broadcast_calls) : 0;
}

/* Test hook, not NCCL API (emu_nccl_hooks.h): from now on this process's links run at Bps
 * (0: unpaced), whatever EMU_NCCL_BW and EMU_NCCL_BW_CHANGE say. prophet-emu --bw-change-at calls
 * it at the start of a given iteration on every rank: a link that changes speed mid-run at a point
 * that does not depend on the machine's load. */
EMU_API void emuNcclSetLinkBandwidth(double Bps)
{
    emu_link_bw_set(Bps);
}

/* Test hook, not NCCL API (emu_nccl_hooks.h): from now on every pass of this process sleeps us
 * microseconds first, whatever EMU_NCCL_LATENCY_US says (a slow collective at a chosen point). */
EMU_API void emuNcclSetLatency(long long us)
{
    emu_latency_set((int64_t)us);
}

/* Test hook, not NCCL API (emu_nccl_hooks.h): comm fails as on a network error found by NCCL's
 * proxy: its async error becomes err (when it had none), its sockets shut (its peers fail with
 * ncclRemoteError at their next pass), pending and later work fails. */
EMU_API void emuNcclCommInjectError(ncclComm_t comm, ncclResult_t err)
{
    if (comm && err != ncclSuccess)
        emu_comm_fail(comm, err);
}

EMU_API ncclResult_t pncclReduce(const void *sendbuff, void *recvbuff, size_t count,
                                 ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
                                 cudaStream_t stream)
{
    return enqueue(
        EMU_OP(EMU_OP_REDUCE, sendbuff, recvbuff, count, datatype, op, root, comm, stream));
}
EMU_ALIAS(ncclReduce);

EMU_API ncclResult_t pncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
                                    ncclDataType_t datatype, int root, ncclComm_t comm,
                                    cudaStream_t stream)
{
    EMU_NCCL_FAULT_POINT("ncclBroadcast");
    if (comm)
        atomic_fetch_add(&comm->broadcast_calls, 1);
    return enqueue(
        EMU_OP(EMU_OP_BROADCAST, sendbuff, recvbuff, count, datatype, ncclSum, root, comm, stream));
}
EMU_ALIAS(ncclBroadcast);

EMU_API ncclResult_t pncclBcast(void *buff, size_t count, ncclDataType_t datatype, int root,
                                ncclComm_t comm, cudaStream_t stream)
{
    return pncclBroadcast(buff, buff, count, datatype, root, comm, stream);
}
EMU_ALIAS(ncclBcast);

EMU_API ncclResult_t pncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
                                    ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
    return enqueue(EMU_OP(EMU_OP_ALLGATHER, sendbuff, recvbuff, sendcount, datatype, ncclSum, 0,
                          comm, stream));
}
EMU_ALIAS(ncclAllGather);

EMU_API ncclResult_t pncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
                                        ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                        cudaStream_t stream)
{
    return enqueue(
        EMU_OP(EMU_OP_REDUCESCATTER, sendbuff, recvbuff, recvcount, datatype, op, 0, comm, stream));
}
EMU_ALIAS(ncclReduceScatter);

EMU_API ncclResult_t pncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype,
                               int peer, ncclComm_t comm, cudaStream_t stream)
{
    return enqueue(
        EMU_OP(EMU_OP_SEND, sendbuff, NULL, count, datatype, ncclSum, peer, comm, stream));
}
EMU_ALIAS(ncclSend);

EMU_API ncclResult_t pncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer,
                               ncclComm_t comm, cudaStream_t stream)
{
    return enqueue(
        EMU_OP(EMU_OP_RECV, NULL, recvbuff, count, datatype, ncclSum, peer, comm, stream));
}
EMU_ALIAS(ncclRecv);

/* Gather, scatter and all-to-all are groups of sends and receives, as in NCCL. */
EMU_API ncclResult_t pncclAlltoAll(const void *sendbuff, void *recvbuff, size_t count,
                                   ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
    size_t bytes = count * emu_dtype_size(datatype);
    ncclResult_t rc = ncclSuccess, r;

    if (!comm)
        return ncclInvalidArgument;
    pncclGroupStart();
    for (int p = 0; p < comm->nranks && rc == ncclSuccess; p++) {
        rc =
            pncclSend((const char *)sendbuff + (size_t)p * bytes, count, datatype, p, comm, stream);
        if (rc == ncclSuccess)
            rc = pncclRecv((char *)recvbuff + (size_t)p * bytes, count, datatype, p, comm, stream);
    }
    r = pncclGroupEnd();
    return rc != ncclSuccess ? rc : r;
}
EMU_ALIAS(ncclAlltoAll);

EMU_API ncclResult_t pncclGather(const void *sendbuff, void *recvbuff, size_t count,
                                 ncclDataType_t datatype, int root, ncclComm_t comm,
                                 cudaStream_t stream)
{
    size_t bytes = count * emu_dtype_size(datatype);
    ncclResult_t rc, r;

    if (!comm)
        return ncclInvalidArgument;
    pncclGroupStart();
    rc = pncclSend(sendbuff, count, datatype, root, comm, stream);
    for (int p = 0; p < comm->nranks && rc == ncclSuccess && comm->rank == root; p++)
        rc = pncclRecv((char *)recvbuff + (size_t)p * bytes, count, datatype, p, comm, stream);
    r = pncclGroupEnd();
    return rc != ncclSuccess ? rc : r;
}
EMU_ALIAS(ncclGather);

EMU_API ncclResult_t pncclScatter(const void *sendbuff, void *recvbuff, size_t count,
                                  ncclDataType_t datatype, int root, ncclComm_t comm,
                                  cudaStream_t stream)
{
    size_t bytes = count * emu_dtype_size(datatype);
    ncclResult_t rc = ncclSuccess, r;

    if (!comm)
        return ncclInvalidArgument;
    pncclGroupStart();
    for (int p = 0; p < comm->nranks && rc == ncclSuccess && comm->rank == root; p++)
        rc =
            pncclSend((const char *)sendbuff + (size_t)p * bytes, count, datatype, p, comm, stream);
    if (rc == ncclSuccess)
        rc = pncclRecv(recvbuff, count, datatype, root, comm, stream);
    r = pncclGroupEnd();
    return rc != ncclSuccess ? rc : r;
}
EMU_ALIAS(ncclScatter);
