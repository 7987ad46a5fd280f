/* Tests of the emulated NCCL: forks N rank processes (unique id made by the parent before fork),
 * each with its own emulated CUDA context and stream, and checks results, errors and timing.
 * Usage: emu_nccl_test <scenario> [args]; exit status 0 = pass. */
#include <cuda.h>
#include <nccl.h>

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "emu_cuda.h"
#include "emu_dtype.h"
#include "include/emu_nccl_hooks.h"

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        fprintf(stderr, "rank %d: %s:%d: ", g_rank, __FILE__, __LINE__);                           \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fprintf(stderr, "\n");                                                                     \
        exit(1);                                                                                   \
    } while (0)
#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c))                                                                                  \
            FAIL("check failed: %s", #c);                                                          \
    } while (0)
#define CU(call)                                                                                   \
    do {                                                                                           \
        CUresult r_ = (call);                                                                      \
        if (r_ != CUDA_SUCCESS)                                                                    \
            FAIL("%s returned %d", #call, (int)r_);                                                \
    } while (0)
#define NC(call)                                                                                   \
    do {                                                                                           \
        ncclResult_t r_ = (call);                                                                  \
        if (r_ != ncclSuccess)                                                                     \
            FAIL("%s returned %d (%s)", #call, (int)r_, ncclGetErrorString(r_));                   \
    } while (0)

static int g_rank = -1;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- rank processes ------------------------------------------------------------------ */

typedef void (*rank_fn)(int rank, int n, const ncclUniqueId *ids);

static rank_fn find_rank_fn(const char *scenario);

/* Forks n ranks, each exec'ing this program as "--rank SCENARIO R N IDS" (the unique ids, made
 * here before the fork, in hex); exec gives every rank a clean single-threaded process. Returns
 * the number of ranks that failed. With err_text, the ranks' stderr is collected (and echoed). */
static int run_ranks(int n, int nids, const char *scenario, double timeout_s, char **err_text,
                     double *elapsed)
{
    ncclUniqueId ids[4];
    pid_t pids[16];
    int fails = 0, pfd[2] = {-1, -1}, alive = n;
    char hex[4 * sizeof(ncclUniqueId) * 2 + 1];
    double t0;
    size_t len = 0, cap = 1 << 16;
    char *text = err_text ? calloc(1, cap) : NULL;

    for (int i = 0; i < nids; i++)
        NC(ncclGetUniqueId(&ids[i]));
    if (err_text && pipe(pfd) < 0)
        FAIL("pipe");
    for (int i = 0; i < nids; i++) {
        for (size_t k = 0; k < sizeof(ncclUniqueId); k++)
            sprintf(hex + (i * sizeof(ncclUniqueId) + k) * 2, "%02x",
                    (unsigned char)ids[i].internal[k]);
    }
    CHECK(find_rank_fn(scenario) != NULL);
    fflush(NULL);
    t0 = now_s();
    for (int r = 0; r < n; r++) {
        pids[r] = fork();
        if (pids[r] == 0) {
            char rs[16], ns[16];
            if (err_text) {
                dup2(pfd[1], 2);
                close(pfd[0]);
                close(pfd[1]);
            }
            snprintf(rs, sizeof(rs), "%d", r);
            snprintf(ns, sizeof(ns), "%d", n);
            execl("/proc/self/exe", "emu_nccl_test", "--rank", scenario, rs, ns, hex, (char *)NULL);
            _exit(127);
        }
    }
    if (err_text)
        close(pfd[1]);
    while (alive > 0) {
        int st;
        pid_t p;
        if (err_text) {
            char buf[4096];
            ssize_t k = read(pfd[0], buf, sizeof(buf));
            if (k > 0) {
                if (len + (size_t)k + 1 > cap)
                    text = realloc(text, cap = (cap + (size_t)k) * 2);
                memcpy(text + len, buf, (size_t)k);
                len += (size_t)k;
                text[len] = 0;
                fwrite(buf, 1, (size_t)k, stderr);
                continue;
            }
        }
        p = waitpid(-1, &st, WNOHANG);
        if (p > 0) {
            alive--;
            if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
                fails++;
                fprintf(stderr, "rank process %d failed (status 0x%x)\n", (int)p, st);
            }
            continue;
        }
        if (now_s() - t0 > timeout_s) {
            fprintf(stderr, "ranks still running after %.1f s: killing them\n", timeout_s);
            for (int r = 0; r < n; r++)
                kill(pids[r], SIGKILL);
        }
        if (p == 0 || (p < 0 && errno == EINTR))
            sleep_ms(5);
    }
    if (elapsed)
        *elapsed = now_s() - t0;
    if (err_text) {
        close(pfd[0]);
        *err_text = text;
    }
    return fails;
}

struct rank_ctx {
    CUcontext ctx;
    CUstream stream;
    ncclComm_t comm;
};

static void rank_setup(struct rank_ctx *rc, int rank, int n, const ncclUniqueId *id)
{
    CUdevice dev;
    CU(cuInit(0));
    CU(cuDeviceGet(&dev, 0));
    CU(cuDevicePrimaryCtxRetain(&rc->ctx, dev));
    CU(cuCtxSetCurrent(rc->ctx));
    CU(cuStreamCreate(&rc->stream, CU_STREAM_NON_BLOCKING));
    if (id)
        NC(ncclCommInitRank(&rc->comm, n, *id, rank));
}

static void *dev_alloc(size_t bytes)
{
    CUdeviceptr p;
    CU(cuMemAlloc(&p, bytes ? bytes : 1));
    return (void *)(uintptr_t)p;
}

/* ---- data and reference results ----------------------------------------------------- */

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

/* Element i of rank r's input for dtype dt (salt separates calls). */
static void gen(void *buf, size_t count, int dt, int r, int salt)
{
    for (size_t i = 0; i < count; i++) {
        uint64_t h = mix((uint64_t)r * 1000003u + i * 7919u + (uint64_t)salt * 104729u + 1);
        double f = ((double)(h % 2000001) - 1000000.0) / 250000.0; /* [-4, 4] */
        int64_t s = (int64_t)(h % 11) - 5;
        switch (dt) {
        case ncclInt8:
            ((int8_t *)buf)[i] = (int8_t)s;
            break;
        case ncclUint8:
            ((uint8_t *)buf)[i] = (uint8_t)(h % 7);
            break;
        case ncclInt32:
            ((int32_t *)buf)[i] = (int32_t)(h % 200001) - 100000;
            break;
        case ncclUint32:
            ((uint32_t *)buf)[i] = (uint32_t)h;
            break;
        case ncclInt64:
            ((int64_t *)buf)[i] = (int64_t)(h >> 8) - (int64_t)(1ll << 54);
            break;
        case ncclUint64:
            ((uint64_t *)buf)[i] = h;
            break;
        case ncclFloat16:
            ((uint16_t *)buf)[i] = emu_double_to_half(f);
            break;
        case ncclFloat32:
            ((float *)buf)[i] = (float)f;
            break;
        case ncclFloat64:
            ((double *)buf)[i] = f;
            break;
        case ncclBfloat16:
            ((uint16_t *)buf)[i] = emu_double_to_bf16(f);
            break;
        case ncclFloat8e4m3:
            ((uint8_t *)buf)[i] = emu_double_to_e4m3(f);
            break;
        case ncclFloat8e5m2:
            ((uint8_t *)buf)[i] = emu_double_to_e5m2(f);
            break;
        }
    }
}

/* Reference: element reduced in ring order x[j+1] op x[j+2] op ... op x[j] (j = owner). */
static void ref_reduce_elem(void *out, size_t i, size_t count, int dt, int op, int n, int owner,
                            int salt)
{
    size_t es = emu_dtype_size(dt);
    char *x = malloc(es * count), acc[8];

    for (int k = 1; k <= n; k++) {
        int r = (owner + k) % n;
        gen(x, count, dt, r, salt);
        if (k == 1)
            memcpy(acc, x + i * es, es);
        else
            emu_reduce(acc, acc, x + i * es, 1, dt, op);
    }
    if (op == ncclAvg)
        emu_divide(acc, 1, dt, n);
    memcpy(out, acc, es);
    free(x);
}

static int chunk_of(size_t i, size_t count, int n)
{
    size_t q = count / (size_t)n, rem = count % (size_t)n;
    size_t big = rem * (q + 1);
    if (i < big)
        return (int)(i / (q + 1));
    return (int)(rem + (i - big) / q);
}

/* Whole-buffer reference for all-reduce: element i belongs to chunk j of the balanced split. */
static void ref_allreduce(void *out, size_t count, int dt, int op, int n, int salt)
{
    size_t es = emu_dtype_size(dt);
    char **x = malloc(sizeof(char *) * (size_t)n);
    for (int r = 0; r < n; r++) {
        x[r] = malloc(es * count + 1);
        gen(x[r], count, dt, r, salt);
    }
    for (size_t i = 0; i < count; i++) {
        int j = chunk_of(i, count, n);
        char acc[8];
        memcpy(acc, x[(j + 1) % n] + i * es, es);
        for (int k = 2; k <= n; k++)
            emu_reduce(acc, acc, x[(j + k) % n] + i * es, 1, dt, op);
        if (op == ncclAvg)
            emu_divide(acc, 1, dt, n);
        memcpy((char *)out + i * es, acc, es);
    }
    for (int r = 0; r < n; r++)
        free(x[r]);
    free(x);
}

static void sync_stream(struct rank_ctx *rc)
{
    ncclResult_t err;
    CU(cuStreamSynchronize(rc->stream));
    NC(ncclCommGetAsyncError(rc->comm, &err));
    if (err != ncclSuccess)
        FAIL("async error %d (%s): %s", err, ncclGetErrorString(err), ncclGetLastError(rc->comm));
}

static void check_bytes(const void *got, const void *want, size_t count, int dt, const char *what)
{
    size_t es = emu_dtype_size(dt);
    for (size_t i = 0; i < count; i++) {
        if (memcmp((const char *)got + i * es, (const char *)want + i * es, es) != 0) {
            uint64_t g = 0, w = 0;
            memcpy(&g, (const char *)got + i * es, es);
            memcpy(&w, (const char *)want + i * es, es);
            FAIL("%s: %s element %zu of %zu: got 0x%llx want 0x%llx", what, emu_dtype_name(dt), i,
                 count, (unsigned long long)g, (unsigned long long)w);
        }
    }
}

/* ---- scenario: correctness ----------------------------------------------------------- */

static void check_allreduce(struct rank_ctx *rc, int n, size_t count, int dt, int op, int salt,
                            int inplace)
{
    size_t es = emu_dtype_size(dt);
    char *sb = dev_alloc(count * es), *rb = inplace ? sb : dev_alloc(count * es);
    char *want = malloc(count * es + 1), what[96];

    gen(sb, count, dt, g_rank, salt);
    NC(ncclAllReduce(sb, rb, count, (ncclDataType_t)dt, (ncclRedOp_t)op, rc->comm, rc->stream));
    sync_stream(rc);
    ref_allreduce(want, count, dt, op, n, salt);
    snprintf(what, sizeof(what), "allreduce %s count=%zu%s", emu_redop_name(op), count,
             inplace ? " in-place" : "");
    check_bytes(rb, want, count, dt, what);
    free(want);
    cuMemFree((CUdeviceptr)(uintptr_t)sb);
    if (!inplace)
        cuMemFree((CUdeviceptr)(uintptr_t)rb);
}

static void check_bcast_reduce(struct rank_ctx *rc, int n, int salt)
{
    size_t count = 1237, es = 4;
    float *sb = dev_alloc(count * es), *rb = dev_alloc(count * es), *want = malloc(count * es);
    unsigned long long bcasts = emuNcclBroadcastCalls(rc->comm),
                       allreduces = emuNcclAllReduceCalls(rc->comm);

    for (int root = 0; root < n; root++) {
        gen(sb, count, ncclFloat32, g_rank, salt + root);
        memset(rb, 0, count * es);
        NC(ncclBroadcast(sb, rb, count, ncclFloat32, root, rc->comm, rc->stream));
        sync_stream(rc);
        gen(want, count, ncclFloat32, root, salt + root);
        check_bytes(rb, want, count, ncclFloat32, "broadcast");
        /* in place (ncclBcast) */
        gen(rb, count, ncclFloat32, g_rank, salt + 7 + root);
        NC(ncclBcast(rb, count, ncclFloat32, root, rc->comm, rc->stream));
        sync_stream(rc);
        gen(want, count, ncclFloat32, root, salt + 7 + root);
        check_bytes(rb, want, count, ncclFloat32, "bcast");
        /* reduce to root: order x[root+1] + ... + x[root] */
        gen(sb, count, ncclFloat32, g_rank, salt + 11 + root);
        memset(rb, 0, count * es);
        NC(ncclReduce(sb, rb, count, ncclFloat32, ncclSum, root, rc->comm, rc->stream));
        sync_stream(rc);
        if (g_rank == root) {
            for (size_t i = 0; i < count; i++)
                ref_reduce_elem(&want[i], i, count, ncclFloat32, ncclSum, n, root,
                                salt + 11 + root);
            check_bytes(rb, want, count, ncclFloat32, "reduce");
        }
    }
    /* the test hooks count each ncclBroadcast and ncclBcast, and no reduce as an all-reduce */
    CHECK(emuNcclBroadcastCalls(rc->comm) == bcasts + 2ull * (unsigned)n);
    CHECK(emuNcclAllReduceCalls(rc->comm) == allreduces);
    CHECK(emuNcclBroadcastCalls(NULL) == 0);
    free(want);
}

static void check_gather_scatter(struct rank_ctx *rc, int n, int salt)
{
    size_t c = 333, es = 8;
    int64_t *sb = dev_alloc(c * es * (size_t)n), *rb = dev_alloc(c * es * (size_t)n);
    int64_t *want = malloc(c * es * (size_t)n);

    gen(sb, c, ncclInt64, g_rank, salt);
    NC(ncclAllGather(sb, rb, c, ncclInt64, rc->comm, rc->stream));
    sync_stream(rc);
    for (int r = 0; r < n; r++)
        gen(want + (size_t)r * c, c, ncclInt64, r, salt);
    check_bytes(rb, want, c * (size_t)n, ncclInt64, "allgather");

    /* reduce-scatter: block j of every rank's send buffer reduced into rank j */
    for (int op = 0; op < ncclNumOps; op++) {
        gen(sb, c * (size_t)n, ncclInt64, g_rank, salt + 1 + op);
        NC(ncclReduceScatter(sb, rb, c, ncclInt64, (ncclRedOp_t)op, rc->comm, rc->stream));
        sync_stream(rc);
        for (size_t i = 0; i < c; i++)
            ref_reduce_elem(&want[i], (size_t)g_rank * c + i, c * (size_t)n, ncclInt64, op, n,
                            g_rank, salt + 1 + op);
        check_bytes(rb, want, c, ncclInt64, "reducescatter");
    }
    free(want);
}

static void check_sendrecv(struct rank_ctx *rc, int n, int salt)
{
    size_t c = 5000;
    int32_t *s1 = dev_alloc(c * 4), *s2 = dev_alloc(c * 4), *r1 = dev_alloc(c * 4);
    int32_t *r2 = dev_alloc(c * 4), *want = malloc(c * 4);
    int next = (g_rank + 1) % n, prev = (g_rank + n - 1) % n;

    gen(s1, c, ncclInt32, g_rank, salt);
    gen(s2, c, ncclInt32, g_rank, salt + 1);
    NC(ncclGroupStart());
    NC(ncclSend(s1, c, ncclInt32, next, rc->comm, rc->stream));
    NC(ncclRecv(r1, c, ncclInt32, prev, rc->comm, rc->stream));
    NC(ncclSend(s2, c, ncclInt32, g_rank, rc->comm, rc->stream));
    NC(ncclRecv(r2, c, ncclInt32, g_rank, rc->comm, rc->stream));
    NC(ncclGroupEnd());
    sync_stream(rc);
    gen(want, c, ncclInt32, prev, salt);
    check_bytes(r1, want, c, ncclInt32, "recv from prev");
    gen(want, c, ncclInt32, g_rank, salt + 1);
    check_bytes(r2, want, c, ncclInt32, "recv from self");
    free(want);
}

static void check_fused(struct rank_ctx *rc, int n, int salt)
{
    size_t c1 = 1001, c2 = 37, c3 = 10;
    float *a = dev_alloc(c1 * 4), *wa = malloc(c1 * 4);
    int64_t *b = dev_alloc(c2 * 8), *wb = malloc(c2 * 8);
    uint16_t *h = dev_alloc(c3 * 2), *wh = malloc(c3 * 2);
    int8_t *g = dev_alloc(64), *gr = dev_alloc(64 * (size_t)n), *wg = malloc(64 * (size_t)n);
    uint64_t before = emuStreamOpsExecuted(rc->stream), after;

    gen(a, c1, ncclFloat32, g_rank, salt);
    gen(b, c2, ncclInt64, g_rank, salt + 1);
    gen(h, c3, ncclFloat16, g_rank, salt + 2);
    gen(g, 64, ncclInt8, g_rank, salt + 3);
    NC(ncclGroupStart());
    NC(ncclAllReduce(a, a, c1, ncclFloat32, ncclSum, rc->comm, rc->stream));
    NC(ncclGroupStart()); /* nested: only the outermost end launches */
    NC(ncclAllReduce(b, b, c2, ncclInt64, ncclMax, rc->comm, rc->stream));
    NC(ncclGroupEnd());
    NC(ncclAllReduce(h, h, c3, ncclFloat16, ncclAvg, rc->comm, rc->stream));
    NC(ncclAllGather(g, gr, 64, ncclInt8, rc->comm, rc->stream));
    NC(ncclGroupEnd());
    sync_stream(rc);
    after = emuStreamOpsExecuted(rc->stream);
    if (after - before != 1)
        FAIL("fused group ran as %llu stream operations, want 1",
             (unsigned long long)(after - before));
    ref_allreduce(wa, c1, ncclFloat32, ncclSum, n, salt);
    ref_allreduce(wb, c2, ncclInt64, ncclMax, n, salt + 1);
    ref_allreduce(wh, c3, ncclFloat16, ncclAvg, n, salt + 2);
    for (int r = 0; r < n; r++)
        gen(wg + 64 * r, 64, ncclInt8, r, salt + 3);
    check_bytes(a, wa, c1, ncclFloat32, "fused allreduce 1");
    check_bytes(b, wb, c2, ncclInt64, "fused allreduce 2");
    check_bytes(h, wh, c3, ncclFloat16, "fused allreduce 3");
    check_bytes(gr, wg, 64 * (size_t)n, ncclInt8, "fused allgather");
}

static void rank_correctness(int rank, int n, const ncclUniqueId *ids)
{
    struct rank_ctx rc;
    size_t counts[] = {0, 1, (size_t)n + 1, 1000 + (size_t)n + 1};
    int salt = 1, cnt, dev, r;

    rank_setup(&rc, rank, n, &ids[0]);
    NC(ncclCommCount(rc.comm, &cnt));
    NC(ncclCommUserRank(rc.comm, &r));
    NC(ncclCommCuDevice(rc.comm, &dev));
    CHECK(cnt == n && r == rank && dev == 0);
    for (int dt = 0; dt < ncclNumTypes; dt++) {
        for (int op = 0; op < ncclNumOps; op++) {
            for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++)
                check_allreduce(&rc, n, counts[k], dt, op, salt++, 0);
        }
        check_allreduce(&rc, n, 777, dt, ncclSum, salt++, 1);
    }
    check_bcast_reduce(&rc, n, 5000);
    check_gather_scatter(&rc, n, 6000);
    check_sendrecv(&rc, n, 7000);
    check_fused(&rc, n, 8000);
    NC(ncclCommFinalize(rc.comm));
    NC(ncclCommDestroy(rc.comm));
}

/* ---- scenario: group across two communicators ------------------------------------------ */

static void rank_group2comms(int rank, int n, const ncclUniqueId *ids)
{
    struct rank_ctx rc;
    ncclComm_t c2;
    CUstream s2;
    size_t c = 4096;
    float *a = dev_alloc(c * 4), *b = dev_alloc(c * 4), *w = malloc(c * 4);

    rank_setup(&rc, rank, n, &ids[0]);
    NC(ncclCommInitRank(&c2, n, ids[1], rank));
    CU(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    gen(a, c, ncclFloat32, rank, 1);
    gen(b, c, ncclFloat32, rank, 2);
    /* stream 1 is busy for 300 ms before the group: the whole group must wait for it, and
     * stream 2 must wait for the group's work on stream 1 */
    CU(emuLaunchKernel(rc.stream, 300000000ull, NULL, NULL));
    NC(ncclGroupStart());
    NC(ncclAllReduce(a, a, c, ncclFloat32, ncclSum, rc.comm, rc.stream));
    NC(ncclAllReduce(b, b, c, ncclFloat32, ncclSum, c2, s2));
    NC(ncclGroupEnd());
    CU(cuStreamSynchronize(s2)); /* only stream 2 */
    ref_allreduce(w, c, ncclFloat32, ncclSum, n, 1);
    check_bytes(a, w, c, ncclFloat32, "comm 1 result seen from stream 2");
    ref_allreduce(w, c, ncclFloat32, ncclSum, n, 2);
    check_bytes(b, w, c, ncclFloat32, "comm 2 result");
    CU(cuStreamSynchronize(rc.stream));
    NC(ncclCommDestroy(c2));
    NC(ncclCommDestroy(rc.comm));
}

/* ---- scenario: ncclCommInitAll in one process ------------------------------------------- */

static int scenario_initall(int n)
{
    ncclComm_t comms[8];
    CUstream st[8];
    CUcontext ctx;
    CUdevice dev;
    size_t c = 1000;
    int32_t *buf[8], *w = malloc(c * 4);

    g_rank = 0;
    CU(cuInit(0));
    CU(cuDeviceGet(&dev, 0));
    CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    CU(cuCtxSetCurrent(ctx));
    NC(ncclCommInitAll(comms, n, NULL));
    for (int i = 0; i < n; i++) {
        int r, d;
        NC(ncclCommUserRank(comms[i], &r));
        NC(ncclCommCuDevice(comms[i], &d));
        CHECK(r == i && d == i);
        CU(cuStreamCreate(&st[i], CU_STREAM_NON_BLOCKING));
        buf[i] = dev_alloc(c * 4);
        gen(buf[i], c, ncclInt32, i, 3);
    }
    NC(ncclGroupStart());
    for (int i = 0; i < n; i++)
        NC(ncclAllReduce(buf[i], buf[i], c, ncclInt32, ncclSum, comms[i], st[i]));
    NC(ncclGroupEnd());
    ref_allreduce(w, c, ncclInt32, ncclSum, n, 3);
    for (int i = 0; i < n; i++) {
        CU(cuStreamSynchronize(st[i]));
        check_bytes(buf[i], w, c, ncclInt32, "initall allreduce");
    }
    for (int i = 0; i < n; i++)
        NC(ncclCommDestroy(comms[i]));
    free(w);
    printf("initall: %d communicators in one process OK\n", n);
    return 0;
}

/* ---- scenario: split --------------------------------------------------------------------- */

static void rank_split(int rank, int n, const ncclUniqueId *ids)
{
    struct rank_ctx rc;
    ncclComm_t sub, none;
    int color = rank % 2, sn, sr, members = 0, mine = -1;
    size_t c = 100;
    int64_t *buf = dev_alloc(c * 8), *w = calloc(c, 8), *x = malloc(c * 8);

    rank_setup(&rc, rank, n, &ids[0]);
    /* keys reversed: the highest parent rank becomes rank 0 */
    NC(ncclCommSplit(rc.comm, color, n - rank, &sub, NULL));
    NC(ncclCommCount(sub, &sn));
    NC(ncclCommUserRank(sub, &sr));
    for (int r = n - 1; r >= 0; r--) {
        if (r % 2 != color)
            continue;
        if (r == rank)
            mine = members;
        members++;
    }
    CHECK(sn == members && sr == mine);
    gen(buf, c, ncclInt64, rank, 9);
    for (int r = 0; r < n; r++) {
        if (r % 2 != color)
            continue;
        gen(x, c, ncclInt64, r, 9);
        for (size_t i = 0; i < c; i++)
            w[i] += x[i];
    }
    NC(ncclAllReduce(buf, buf, c, ncclInt64, ncclSum, sub, rc.stream));
    sync_stream(&rc);
    check_bytes(buf, w, c, ncclInt64, "split allreduce");
    /* NOCOLOR: no communicator */
    NC(ncclCommSplit(rc.comm, rank == 0 ? NCCL_SPLIT_NOCOLOR : 0, 0, &none, NULL));
    CHECK(rank == 0 ? none == NULL : none != NULL);
    if (none)
        NC(ncclCommDestroy(none));
    NC(ncclCommDestroy(sub));
    NC(ncclCommDestroy(rc.comm));
}

/* ---- scenario: mismatch, peer death, abort ------------------------------------------------ */

/* Polls the async error for up to 10 s; returns it. */
static ncclResult_t wait_async_error(ncclComm_t comm)
{
    ncclResult_t err = ncclSuccess;
    double t0 = now_s();
    while (now_s() - t0 < 10) {
        NC(ncclCommGetAsyncError(comm, &err));
        if (err != ncclSuccess && err != ncclInProgress)
            return err;
        sleep_ms(5);
    }
    return err;
}

/* The same two all-reduces, as one group on rank 0 and one by one on the others: a grouping that
 * differs between ranks (undefined on real NCCL: a hang, an internal error or wrong values) must
 * fail, naming the group. */
static void rank_group_mismatch(int rank, int n, const ncclUniqueId *ids)
{
    struct rank_ctx rc;
    size_t c = 1024;
    float *a = dev_alloc(c * 4), *b = dev_alloc(c * 4);
    ncclResult_t err;

    rank_setup(&rc, rank, n, &ids[0]);
    NC(ncclAllReduce(a, a, c, ncclFloat32, ncclSum, rc.comm, rc.stream)); /* #0 agrees */
    if (rank == 0) {
        NC(ncclGroupStart());
        NC(ncclAllReduce(a, a, c, ncclFloat32, ncclSum, rc.comm, rc.stream));
        NC(ncclAllReduce(b, b, c, ncclFloat32, ncclSum, rc.comm, rc.stream));
        NC(ncclGroupEnd());
    } else {
        NC(ncclAllReduce(a, a, c, ncclFloat32, ncclSum, rc.comm, rc.stream));
        NC(ncclAllReduce(b, b, c, ncclFloat32, ncclSum, rc.comm, rc.stream));
    }
    err = wait_async_error(rc.comm);
    if (err == ncclSuccess)
        FAIL("no async error after a group that differs between ranks");
    fprintf(stderr, "rank %d: async error %d (%s)\n", rank, err, ncclGetErrorString(err));
    CU(cuStreamSynchronize(rc.stream)); /* the stream must not hang */
    NC(ncclCommAbort(rc.comm));
}

static void rank_mismatch(int rank, int n, const ncclUniqueId *ids)
{
    struct rank_ctx rc;
    size_t c = 1024;
    float *buf = dev_alloc(c * 4);
    ncclResult_t err;

    rank_setup(&rc, rank, n, &ids[0]);
    for (int i = 0; i < 3; i++) /* #0..#2 agree */
        NC(ncclAllReduce(buf, buf, c, ncclFloat32, ncclSum, rc.comm, rc.stream));
    if (rank == 1)
        NC(ncclBroadcast(buf, buf, c, ncclFloat32, 0, rc.comm, rc.stream));
    else
        NC(ncclAllReduce(buf, buf, c, ncclFloat32, ncclSum, rc.comm, rc.stream));
    err = wait_async_error(rc.comm);
    if (err == ncclSuccess)
        FAIL("no async error after a mismatch");
    fprintf(stderr, "rank %d: async error %d (%s)\n", rank, err, ncclGetErrorString(err));
    CU(cuStreamSynchronize(rc.stream)); /* the stream must not hang */
    NC(ncclCommAbort(rc.comm));
}

/* EMU_FAULT="ncclAllReduce:2:rank=1:rc=5" (set by the test): rank 1's second ncclAllReduce
 * returns ncclInvalidUsage and enqueues nothing; every other call succeeds, so rank 1 retries
 * and every rank ends with the same two sums. */
static void rank_fault(int rank, int n, const ncclUniqueId *ids)
{
    struct rank_ctx rc;
    float *buf = dev_alloc(4 * sizeof(float));
    ncclResult_t want;

    rank_setup(&rc, rank, n, &ids[0]);
    for (int i = 0; i < 4; i++)
        buf[i] = 1.0f;
    NC(ncclAllReduce(buf, buf, 4, ncclFloat32, ncclSum, rc.comm, rc.stream));
    want = rank == 1 ? ncclInvalidUsage : ncclSuccess;
    if (ncclAllReduce(buf, buf, 4, ncclFloat32, ncclSum, rc.comm, rc.stream) != want)
        FAIL("second ncclAllReduce: want %d", (int)want);
    if (rank == 1)
        NC(ncclAllReduce(buf, buf, 4, ncclFloat32, ncclSum, rc.comm, rc.stream));
    sync_stream(&rc);
    for (int i = 0; i < 4; i++)
        if (buf[i] != (float)(n * n))
            FAIL("element %d = %g, want %d", i, buf[i], n * n);
    NC(ncclCommDestroy(rc.comm));
}

static void rank_peerdeath(int rank, int n, const ncclUniqueId *ids)
{
    struct rank_ctx rc;
    size_t c = 1 << 20;
    float *buf = dev_alloc(c * 4);
    ncclResult_t err;

    rank_setup(&rc, rank, n, &ids[0]);
    NC(ncclAllReduce(buf, buf, c, ncclFloat32, ncclSum, rc.comm, rc.stream));
    sync_stream(&rc);
    if (rank == n - 1)
        _exit(0); /* dies without a word */
    NC(ncclAllReduce(buf, buf, c, ncclFloat32, ncclSum, rc.comm, rc.stream));
    err = wait_async_error(rc.comm);
    if (err != ncclRemoteError && err != ncclSystemError)
        FAIL("async error %d after a peer died, want remote/system error", err);
    CU(cuStreamSynchronize(rc.stream));
    NC(ncclCommAbort(rc.comm));
}

static void rank_abort(int rank, int n, const ncclUniqueId *ids)
{
    struct rank_ctx rc;
    size_t c = 1 << 16;
    float *buf = dev_alloc(c * 4);
    double t0;

    rank_setup(&rc, rank, n, &ids[0]);
    if (rank != 0) {
        sleep_ms(1500); /* never joins the all-reduce */
        return;
    }
    NC(ncclAllReduce(buf, buf, c, ncclFloat32, ncclSum, rc.comm, rc.stream));
    NC(ncclAllReduce(buf, buf, c, ncclFloat32, ncclSum, rc.comm, rc.stream));
    sleep_ms(200);
    CHECK(cuStreamQuery(rc.stream) == CUDA_ERROR_NOT_READY);
    t0 = now_s();
    NC(ncclCommAbort(rc.comm));
    CU(cuStreamSynchronize(rc.stream));
    if (now_s() - t0 > 1.0)
        FAIL("stream work took %.3f s to finish after ncclCommAbort", now_s() - t0);
}

/* A rank that stays silent (alive, sockets open): the others give up after EMU_NCCL_TIMEOUT_MS. */
static void rank_timeout(int rank, int n, const ncclUniqueId *ids)
{
    struct rank_ctx rc;
    size_t c = 1000;
    float *buf = dev_alloc(c * 4);
    ncclResult_t err;
    double t0;

    rank_setup(&rc, rank, n, &ids[0]);
    if (rank == n - 1) {
        sleep_ms(2500);
        return;
    }
    t0 = now_s();
    NC(ncclAllReduce(buf, buf, c, ncclFloat32, ncclSum, rc.comm, rc.stream));
    err = wait_async_error(rc.comm);
    if (err != ncclSystemError && err != ncclRemoteError)
        FAIL("async error %d with a silent peer, want system/remote error", err);
    CU(cuStreamSynchronize(rc.stream));
    if (now_s() - t0 > 2.0)
        FAIL("took %.3f s to give up (EMU_NCCL_TIMEOUT_MS=%s)", now_s() - t0,
             getenv("EMU_NCCL_TIMEOUT_MS"));
    NC(ncclCommAbort(rc.comm));
}

/* ---- scenario: non-blocking init ------------------------------------------------------------ */

static void rank_nonblocking(int rank, int n, const ncclUniqueId *ids)
{
    struct rank_ctx rc;
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    ncclResult_t rc1, err = ncclInProgress;
    size_t c = 999;
    int32_t *buf = dev_alloc(c * 4), *w = malloc(c * 4);
    int saw_inprogress = 0;

    rank_setup(&rc, rank, n, NULL);
    cfg.blocking = 0;
    if (rank == 0)
        sleep_ms(300); /* the others stay in progress meanwhile */
    rc1 = ncclCommInitRankConfig(&rc.comm, n, ids[0], rank, &cfg);
    if (rc1 != ncclInProgress)
        FAIL("non-blocking init returned %d, want ncclInProgress", rc1);
    gen(buf, c, ncclInt32, rank, 4);
    rc1 = ncclAllReduce(buf, buf, c, ncclInt32, ncclSum, rc.comm, rc.stream);
    if (rank != 0 && rc1 != ncclInProgress)
        FAIL("all-reduce on a communicator still initialising returned %d, want ncclInProgress",
             rc1);
    if (rc1 != ncclInProgress && rc1 != ncclSuccess)
        FAIL("all-reduce returned %d", rc1);
    for (double t0 = now_s(); now_s() - t0 < 10;) {
        NC(ncclCommGetAsyncError(rc.comm, &err));
        if (err != ncclInProgress)
            break;
        saw_inprogress = 1;
        sleep_ms(2);
    }
    if (err != ncclSuccess)
        FAIL("non-blocking init ended with %d", err);
    if (rank != 0 && !saw_inprogress)
        FAIL("ncclCommGetAsyncError never reported ncclInProgress");
    sync_stream(&rc);
    ref_allreduce(w, c, ncclInt32, ncclSum, n, 4);
    check_bytes(buf, w, c, ncclInt32, "non-blocking comm allreduce");
    NC(ncclAllReduce(buf, buf, c, ncclInt32, ncclSum, rc.comm, rc.stream));
    sync_stream(&rc);
    NC(ncclCommDestroy(rc.comm));
}

/* ---- scenario: capture ---------------------------------------------------------------------- */

static void rank_capture(int rank, int n, const ncclUniqueId *ids)
{
    struct rank_ctx rc;
    size_t c = 64, nops = 0;
    int32_t *buf = dev_alloc(c * 4), *w = malloc(c * 4);
    CUgraph g;
    uint64_t done;

    rank_setup(&rc, rank, n, &ids[0]);
    gen(buf, c, ncclInt32, rank, 5);
    done = emuStreamOpsExecuted(rc.stream);
    CU(cuStreamBeginCapture(rc.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    NC(ncclAllReduce(buf, buf, c, ncclInt32, ncclSum, rc.comm, rc.stream));
    CU(cuStreamEndCapture(rc.stream, &g));
    CU(emuGraphNumOps(g, &nops));
    CHECK(nops >= 1);
    CU(cuStreamSynchronize(rc.stream));
    CHECK(emuStreamOpsExecuted(rc.stream) == done);
    gen(w, c, ncclInt32, rank, 5);
    check_bytes(buf, w, c, ncclInt32, "captured all-reduce must not run");
    /* the communicator still works: the captured call took no sequence number */
    NC(ncclAllReduce(buf, buf, c, ncclInt32, ncclSum, rc.comm, rc.stream));
    sync_stream(&rc);
    ref_allreduce(w, c, ncclInt32, ncclSum, n, 5);
    check_bytes(buf, w, c, ncclInt32, "all-reduce after capture");
    NC(ncclCommDestroy(rc.comm));
}

/* ---- scenario: pacing -------------------------------------------------------------------------
 */

static size_t g_pacing_bytes;
static int g_pacing_attempts = 3;

/* Bytes/s of "1Gbit", "500Mbit", "125MB", "1e8" (the forms this test uses). */
static double parse_bw(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    if (!strcmp(end, "Gbit"))
        return v * 1e9 / 8;
    if (!strcmp(end, "Mbit"))
        return v * 1e6 / 8;
    if (!strcmp(end, "GB"))
        return v * 1e9;
    if (!strcmp(end, "MB"))
        return v * 1e6;
    return v;
}

/* Times `attempts` all-reduces of g_pacing_bytes and checks the fastest against the ring model
 * 2(N-1)/N * bytes / BW + latency (the best of a few, so a loaded CI machine does not fail it;
 * a wrong pacing fails every attempt). */
static void rank_pacing(int rank, int n, const ncclUniqueId *ids)
{
    struct rank_ctx rc;
    size_t count = g_pacing_bytes / 4;
    float *sb = dev_alloc(count * 4), *rb = dev_alloc(count * 4), *line = dev_alloc(4096);
    double bw = parse_bw(getenv("EMU_NCCL_BW")), best = INFINITY, want;

    rank_setup(&rc, rank, n, &ids[0]);
    for (size_t i = 0; i < count; i++)
        sb[i] = (float)((i + (size_t)rank) % 17);
    want = 2.0 * (n - 1) / n * (double)(count * 4) / bw;
    if (getenv("EMU_NCCL_LATENCY_US"))
        want += atof(getenv("EMU_NCCL_LATENCY_US")) * 1e-6;
    for (int a = 0; a < g_pacing_attempts; a++) {
        double t0, t;
        NC(ncclAllReduce(line, line, 1024, ncclFloat32, ncclSum, rc.comm, rc.stream));
        sync_stream(&rc); /* line the ranks up */
        t0 = now_s();
        NC(ncclAllReduce(sb, rb, count, ncclFloat32, ncclSum, rc.comm, rc.stream));
        sync_stream(&rc);
        t = now_s() - t0;
        if (t < best)
            best = t;
        if (rank == 0)
            printf("pacing: attempt %d: %.3f s\n", a + 1, t);
    }
    printf("pacing: rank %d: %zu-byte all-reduce, %d ranks, %.0f B/s: best %.3f s (ring model "
           "%.3f s, %+.1f%%)\n",
           rank, count * 4, n, bw, best, want, (best / want - 1) * 100);
    fflush(stdout);
    if (fabs(best / want - 1) > 0.10)
        FAIL("measured %.3f s is not within 10%% of the model's %.3f s", best, want);
    for (size_t i = 0; i < count; i += count / 7 + 1) {
        float s = 0;
        for (int r = 0; r < n; r++)
            s += (float)((i + (size_t)r) % 17);
        if (rb[i] != s)
            FAIL("pacing all-reduce result wrong at %zu", i);
    }
    NC(ncclCommDestroy(rc.comm));
}

/* The max over the ranks of v (a one-element all-reduce, synchronised). */
static double allreduce_max(struct rank_ctx *rc, float *x, double v)
{
    x[0] = (float)v;
    NC(ncclAllReduce(x, x, 1, ncclFloat32, ncclMax, rc->comm, rc->stream));
    sync_stream(rc);
    return x[0];
}

/* EMU_NCCL_BW_CHANGE: the link slows from 1 Gbit/s to 250 Mbit/s 2 s after the first paced
 * transfer of its process. Times 10 MB all-reduces and checks the best one that ended 0.2 s
 * before any rank's link changed and the best one that began 0.2 s after every rank's had, for
 * 1.5 s, each against the ring model at the speed in force then (below it by at most 15%; above
 * it see the check).
 * Each process's link clock starts at its own first paced transfer (this rank's first all-reduce),
 * and on a loaded host the ranks reach theirs apart (1.2 s seen: with windows on each rank's own
 * clock one rank had no sample before the change, the other none after it). The first
 * all-reduce's end is a moment common to the ranks (each waits for the other's data): each rank's
 * link age then, exchanged (max and min), puts every link's change on this rank's timeline.
 * The ranks agree on the last all-reduce (a one-element max of 'done' after each): each rank's
 * own clock would end its loop at another call, and a rank that leaves early closes the ring under
 * its peer. */
static void rank_pacing_change(int rank, int n, const ncclUniqueId *ids)
{
    struct rank_ctx rc;
    size_t count = 10000000 / 4;
    float *sb = dev_alloc(count * 4), *rb = dev_alloc(count * 4), *x = dev_alloc(4);
    double before = INFINITY, after = INFINITY, want_before, want_after, t_first, t_common, age;
    double first_change, last_change; /* seconds after t_common, on this rank's clock */

    for (size_t i = 0; i < count; i++)
        sb[i] = (float)((i + (size_t)rank) % 17);
    want_before = 2.0 * (n - 1) / n * (double)(count * 4) / parse_bw("1Gbit");
    want_after = 2.0 * (n - 1) / n * (double)(count * 4) / parse_bw("250Mbit");
    rank_setup(&rc, rank, n, &ids[0]); /* a rendezvous: the ranks leave it together */
    t_first = now_s();
    allreduce_max(&rc, x, 0); /* this process's first paced transfer */
    t_common = now_s();
    age = t_common - t_first;
    first_change = 2.0 - allreduce_max(&rc, x, age);
    last_change = 2.0 + allreduce_max(&rc, x, -age);
    for (;;) {
        double t0 = now_s(), t, since = t0 - t_common;
        NC(ncclAllReduce(sb, rb, count, ncclFloat32, ncclSum, rc.comm, rc.stream));
        sync_stream(&rc);
        t = now_s() - t0;
        if (since + t < first_change - 0.2 && t < before)
            before = t;
        if (since > last_change + 0.2 && t < after)
            after = t;
        if (allreduce_max(&rc, x, since > last_change + 1.7 ? 1.0 : 0.0) > 0)
            break;
    }
    printf("pacing_change: rank %d: best %.3f s before (model %.3f s), %.3f s after (model %.3f "
           "s); the links changed %.3f..%.3f s after the ranks met\n",
           rank, before, want_before, after, want_after, first_change, last_change);
    fflush(stdout);
    /* Pacing guarantees lower bounds only (a link is never faster than its speed); a loaded
     * host adds CPU time to every transfer (+28% on the fast one seen, beside a TSan pass), the
     * same time to both: the slow one may take the fast one's excess over its model. The fast
     * link is shown by a transfer quicker than the slow link could ever make it. */
    double excess = before > want_before ? before - want_before : 0;
    if (before < want_before * 0.85 || before >= want_after * 0.85 || after < want_after * 0.85 ||
        after > want_after * 1.15 + excess)
        FAIL("the link did not change speed as EMU_NCCL_BW_CHANGE says");
    NC(ncclCommDestroy(rc.comm));
}

/* ---- single-process scenarios ---------------------------------------------------------- */

static int scenario_symbols(const char *lib)
{
    static const char *const names[] = {"GetVersion",   "GetUniqueId",    "GetErrorString",
                                        "GetLastError", "CommInitRank",   "CommInitRankConfig",
                                        "CommInitAll",  "CommSplit",      "CommDestroy",
                                        "CommAbort",    "CommFinalize",   "CommGetAsyncError",
                                        "CommCount",    "CommCuDevice",   "CommUserRank",
                                        "AllReduce",    "Reduce",         "Broadcast",
                                        "Bcast",        "AllGather",      "ReduceScatter",
                                        "Send",         "Recv",           "GroupStart",
                                        "GroupEnd",     "MemAlloc",       "MemFree",
                                        "CommRegister", "CommDeregister", "RedOpCreatePreMulSum",
                                        "RedOpDestroy"};
    char cmd[1024], line[512], *text = calloc(1, 1 << 20);
    size_t len = 0;
    FILE *p;

    snprintf(cmd, sizeof(cmd), "nm -D --defined-only '%s'", lib);
    p = popen(cmd, "r");
    CHECK(p);
    while (fgets(line, sizeof(line), p)) {
        char type, name[256];
        if (sscanf(line, "%*s %c %255s", &type, name) != 2)
            continue;
        /* emuNccl*: the test hooks of emu_nccl_hooks.h */
        if (strncmp(name, "nccl", 4) != 0 && strncmp(name, "pnccl", 5) != 0 && name[0] != '_' &&
            strncmp(name, "emuNccl", 7) != 0)
            FAIL("exported a non-NCCL symbol: %s", name);
        len += (size_t)snprintf(text + len, (1 << 20) - len, "%c %s\n", type, name);
    }
    CHECK(pclose(p) == 0 && len > 0);
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        char w[128], t[128];
        snprintf(w, sizeof(w), "\nW nccl%s\n", names[i]);
        snprintf(t, sizeof(t), "\nT pnccl%s\n", names[i]);
        memmove(text + 1, text, len + 1);
        text[0] = '\n';
        if (!strstr(text, w) || !strstr(text, t))
            FAIL("missing W nccl%s or T pnccl%s", names[i], names[i]);
        memmove(text, text + 1, len + 1);
    }
    free(text);
    printf("symbols: %zu NCCL API names checked (weak nccl*, strong pnccl*)\n",
           sizeof(names) / sizeof(names[0]));
    return 0;
}

/* Nearest representable value by exhaustive search (independent of the library's rounding). */
static uint32_t nearest(double d, int bits, double (*dec)(uint32_t))
{
    uint32_t best = 0;
    double bd = INFINITY;
    for (uint32_t v = 0; v < (1u << bits); v++) {
        double x = dec(v), e;
        if (isnan(x) || isinf(x))
            continue;
        e = fabs(x - d);
        if (e < bd || (e == bd && !(v & 1) && (best & 1))) {
            bd = e;
            best = v;
        }
    }
    return best;
}

static double dec_half(uint32_t v)
{
    return emu_half_to_double((uint16_t)v);
}
static double dec_bf16(uint32_t v)
{
    return emu_bf16_to_double((uint16_t)v);
}
static double dec_e4m3(uint32_t v)
{
    return emu_e4m3_to_double((uint8_t)v);
}
static double dec_e5m2(uint32_t v)
{
    return emu_e5m2_to_double((uint8_t)v);
}

static int scenario_dtype(void)
{
    g_rank = 0;
    CHECK(emu_half_to_double(0x3c00) == 1.0 && emu_half_to_double(0xc000) == -2.0);
    CHECK(emu_half_to_double(0x7bff) == 65504.0 && emu_half_to_double(0x0001) == ldexp(1, -24));
    CHECK(emu_bf16_to_double(0x3f80) == 1.0 && emu_e4m3_to_double(0x7e) == 448.0);
    CHECK(emu_e5m2_to_double(0x7b) == 57344.0 && emu_e4m3_to_double(0x38) == 1.0);
    CHECK(emu_double_to_half(1.0 + ldexp(1, -11)) == 0x3c00); /* tie to even */
    CHECK(emu_double_to_half(1.0 + 3 * ldexp(1, -11)) == 0x3c02);
    CHECK(emu_double_to_half(65520.0) == 0x7c00); /* overflow to inf */
    CHECK(emu_double_to_e4m3(1000.0) == 0x7e);    /* saturates */
    for (int i = 0; i < 500; i++) {
        uint64_t h = mix((uint64_t)i + 77);
        double d = ldexp((double)(h % 100000) / 100000.0 + 0.5, (int)(h >> 40) % 40 - 28);
        if (h & 1)
            d = -d;
        if (fabs(d) < 60000 &&
            dec_half(emu_double_to_half(d)) != dec_half(nearest(d, 16, dec_half)))
            FAIL("half rounding of %.17g", d);
        if (i % 3 == 0 && dec_bf16(emu_double_to_bf16(d)) != dec_bf16(nearest(d, 16, dec_bf16)))
            FAIL("bf16 rounding of %.17g", d);
        if (fabs(d) < 448 && dec_e4m3(emu_double_to_e4m3(d)) != dec_e4m3(nearest(d, 8, dec_e4m3)))
            FAIL("e4m3 rounding of %.17g", d);
        if (fabs(d) < 57344 && dec_e5m2(emu_double_to_e5m2(d)) != dec_e5m2(nearest(d, 8, dec_e5m2)))
            FAIL("e5m2 rounding of %.17g", d);
    }
    /* two-operand half sum equals the correctly rounded sum */
    for (int i = 0; i < 300; i++) {
        uint16_t a = (uint16_t)(mix((uint64_t)i) & 0x7bff),
                 b = (uint16_t)(mix((uint64_t)i + 9e6) & 0xfbff), s;
        double exact = emu_half_to_double(a) + emu_half_to_double(b);
        emu_reduce(&s, &a, &b, 1, ncclFloat16, ncclSum);
        if (fabs(exact) < 60000 && dec_half(s) != dec_half(nearest(exact, 16, dec_half)))
            FAIL("half sum 0x%04x + 0x%04x", a, b);
    }
    printf("dtype: conversions and half sums correctly rounded\n");
    return 0;
}

static int scenario_api(void)
{
    ncclUniqueId id;
    ncclComm_t comm;
    int v;
    struct rank_ctx rc;
    float *b;

    g_rank = 0;
    NC(ncclGetVersion(&v));
    CHECK(v == NCCL_VERSION_CODE && v == 22809);
    CHECK(strcmp(ncclGetErrorString(ncclSuccess), "no error") == 0);
    CHECK(ncclAllReduce(NULL, NULL, 1, ncclFloat32, ncclSum, NULL, NULL) == ncclInvalidArgument);
    CHECK(ncclGroupEnd() == ncclInvalidUsage);
    rank_setup(&rc, 0, 1, NULL);
    NC(ncclGetUniqueId(&id));
    NC(ncclCommInitRank(&comm, 1, id, 0));
    b = dev_alloc(64);
    CHECK(ncclAllReduce(b, b, 4, (ncclDataType_t)ncclNumTypes, ncclSum, comm, rc.stream) ==
          ncclInvalidArgument);
    CHECK(ncclAllReduce(b, b, 4, ncclFloat32, (ncclRedOp_t)ncclNumOps, comm, rc.stream) ==
          ncclInvalidArgument);
    CHECK(ncclBroadcast(b, b, 4, ncclFloat32, 1, comm, rc.stream) == ncclInvalidArgument);
    b[0] = 3;
    NC(ncclAllReduce(b, b, 1, ncclFloat32, ncclAvg, comm, rc.stream));
    CU(cuStreamSynchronize(rc.stream));
    CHECK(b[0] == 3);
    {
        void *m = NULL, *hnd = NULL;
        NC(ncclMemAlloc(&m, 4096));
        CHECK(m != NULL);
        NC(ncclCommRegister(comm, m, 4096, &hnd));
        NC(ncclCommDeregister(comm, hnd));
        NC(ncclMemFree(m));
    }
    NC(ncclCommDestroy(comm));
    printf("api: version, errors and a 1-rank communicator OK\n");
    return 0;
}

static const struct {
    const char *name;
    rank_fn fn;
} rank_fns[] = {
    {"correctness", rank_correctness},
    {"group2comms", rank_group2comms},
    {"split", rank_split},
    {"peerdeath", rank_peerdeath},
    {"timeout", rank_timeout},
    {"abort", rank_abort},
    {"nonblocking", rank_nonblocking},
    {"capture", rank_capture},
    {"mismatch", rank_mismatch},
    {"group_mismatch", rank_group_mismatch},
    {"fault", rank_fault},
    {"pacing", rank_pacing},
    {"pacing_change", rank_pacing_change},
};

static rank_fn find_rank_fn(const char *scenario)
{
    for (size_t i = 0; i < sizeof(rank_fns) / sizeof(rank_fns[0]); i++) {
        if (!strcmp(rank_fns[i].name, scenario))
            return rank_fns[i].fn;
    }
    return NULL;
}

/* A rank process: --rank SCENARIO R N HEXIDS. */
static int rank_main(int argc, char **argv)
{
    ncclUniqueId ids[4];
    const char *hex;
    CUdevice dev;
    CUcontext ctx;
    rank_fn fn;
    int n;

    if (argc < 6)
        return 2;
    fn = find_rank_fn(argv[2]);
    g_rank = atoi(argv[3]);
    setenv("EMU_RANK", argv[3], 1); /* the rank EMU_FAULT's rank= names */
    n = atoi(argv[4]);
    hex = argv[5];
    memset(ids, 0, sizeof(ids));
    for (size_t k = 0; hex[2 * k] && hex[2 * k + 1] && k < sizeof(ids); k++) {
        unsigned v;
        sscanf(hex + 2 * k, "%2x", &v);
        ((unsigned char *)ids)[k] = (unsigned char)v;
    }
    if (getenv("EMU_TEST_PACING_BYTES"))
        g_pacing_bytes = strtoull(getenv("EMU_TEST_PACING_BYTES"), NULL, 10);
    if (getenv("EMU_TEST_PACING_ATTEMPTS"))
        g_pacing_attempts = atoi(getenv("EMU_TEST_PACING_ATTEMPTS"));
    CU(cuInit(0));
    CU(cuDeviceGet(&dev, 0));
    CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    CU(cuCtxSetCurrent(ctx));
    fn(g_rank, n, ids);
    fflush(NULL);
    _exit(0);
}

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "";
    int n = argc > 2 ? atoi(argv[2]) : 2, fails;
    double elapsed = 0;
    char *err = NULL;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!strcmp(what, "--rank"))
        return rank_main(argc, argv);
    if (!strcmp(what, "symbols") && argc > 2)
        return scenario_symbols(argv[2]);
    if (!strcmp(what, "dtype"))
        return scenario_dtype();
    if (!strcmp(what, "api"))
        return scenario_api();
    if (!strcmp(what, "initall"))
        return scenario_initall(n);
    if (n < 1 || n > 16) {
        fprintf(stderr, "bad rank count\n");
        return 2;
    }
    if (!strcmp(what, "correctness")) {
        fails = run_ranks(n, 1, "correctness", 50, NULL, &elapsed);
        printf("correctness: %d ranks, %.2f s, %d failed\n", n, elapsed, fails);
        return fails != 0;
    }
    if (!strcmp(what, "group2comms"))
        return run_ranks(n, 2, "group2comms", 30, NULL, NULL) != 0;
    if (!strcmp(what, "split"))
        return run_ranks(n, 1, "split", 30, NULL, NULL) != 0;
    if (!strcmp(what, "peerdeath"))
        return run_ranks(n, 1, "peerdeath", 20, NULL, NULL) != 0;
    if (!strcmp(what, "timeout")) {
        setenv("EMU_NCCL_TIMEOUT_MS", "500", 0);
        return run_ranks(n, 1, "timeout", 20, NULL, NULL) != 0;
    }
    if (!strcmp(what, "abort"))
        return run_ranks(n, 1, "abort", 20, NULL, NULL) != 0;
    if (!strcmp(what, "nonblocking"))
        return run_ranks(n, 1, "nonblocking", 20, NULL, NULL) != 0;
    if (!strcmp(what, "capture"))
        return run_ranks(n, 1, "capture", 20, NULL, NULL) != 0;
    if (!strcmp(what, "fault")) { /* EMU_FAULT set by the test: the rank checks its call */
        const char *hit = "emu-fault: ncclAllReduce call 2 fails with 5 (rank 1)";
        int bad;
        fails = run_ranks(n, 1, "fault", 20, &err, &elapsed);
        fputs(err, stderr);
        bad = fails || !strstr(err, hit) || strstr(strstr(err, hit) + 1, "emu-fault:");
        free(err);
        if (bad)
            fprintf(stderr, "FAIL: %d ranks failed, or not exactly one '%s'\n", fails, hit);
        return bad;
    }
    if (!strcmp(what, "mismatch")) {
        int bad;
        fails = run_ranks(n, 1, "mismatch", 20, &err, &elapsed);
        printf("mismatch: %d ranks finished in %.3f s\n", n, elapsed);
        if (fails) {
            fprintf(stderr, "FAIL: %d ranks did not see the error\n", fails);
            return 1;
        }
        /* found by the exchange of call descriptors, not by the 30 s timeout
         * (EMU_NCCL_TIMEOUT_MS): half of that leaves room for TSan ranks on a loaded host */
        if (elapsed > 15.0) {
            fprintf(stderr, "FAIL: took %.3f s (> 15 s: the timeout's path?)\n", elapsed);
            return 1;
        }
        bad = !strstr(err, "collective mismatch on comm 0x") ||
              !strstr(err, "issued allreduce #3 count=1024 float32 sum") ||
              !strstr(err, "issued broadcast #3 count=1024 float32 root=0");
        free(err);
        if (bad) {
            fprintf(stderr, "FAIL: stderr lacks the mismatch line naming both sides\n");
            return 1;
        }
        return 0;
    }
    if (!strcmp(what, "group_mismatch")) {
        int bad;
        fails = run_ranks(n, 1, "group_mismatch", 20, &err, &elapsed);
        printf("group_mismatch: %d ranks finished in %.3f s\n", n, elapsed);
        bad =
            fails || !strstr(err, "collective mismatch on comm 0x") || !strstr(err, "(in a group)");
        free(err);
        if (bad)
            fprintf(stderr,
                    "FAIL: %d ranks did not see the error, or no mismatch line names the "
                    "group\n",
                    fails);
        return bad;
    }
    if (!strcmp(what, "pacing")) {
        setenv("EMU_TEST_PACING_BYTES", argc > 3 ? argv[3] : "10000000", 1);
        setenv("EMU_TEST_PACING_ATTEMPTS", argc > 4 ? argv[4] : "4", 1);
        setenv("EMU_NCCL_BW", "1Gbit", 0);
        fails = run_ranks(n, 1, "pacing", 100, NULL, &elapsed);
        return fails != 0;
    }
    if (!strcmp(what, "pacing_change")) {
        setenv("EMU_NCCL_BW", "1Gbit", 1);
        setenv("EMU_NCCL_BW_CHANGE", "2000:250Mbit", 1);
        fails = run_ranks(n, 1, "pacing_change", 100, NULL, &elapsed);
        return fails != 0;
    }
    fprintf(stderr,
            "usage: %s symbols LIB | dtype | api | initall N | correctness N | "
            "group2comms N | split N | mismatch N | group_mismatch N | peerdeath N | abort N | "
            "nonblocking N | capture N | fault N | pacing N BYTES | pacing_change N\n",
            argv[0]);
    return 2;
}
