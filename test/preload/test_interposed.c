/* Interposed behaviour beyond all-reduce(sum, float32) on one stream, under the preload on the
 * emulated cluster. Each scenario runs ITERS iterations of K all-reduces of different sizes (a
 * K-call iteration the preload learns and then holds), counts what the preload holds through the
 * emulated NCCL's hook (emu_nccl_hooks.h) and checks every result on the host, exactly.
 *   preload-interposed colls     from iteration HOLD_FROM on, a broadcast, reduce-scatter,
 *                                all-gather, send/recv pair or reduce arrives in the middle of the
 *                                iteration: whatever was held is released before it (held count
 *                                0 right after), and every result is exact
 *   preload-interposed streams   two streams on one communicator (half the calls on each)
 *   preload-interposed dtypes    int8..uint64, float16, bfloat16, float64 with sum, prod, max,
 *                                min, avg, and PREMUL_SUM (ncclRedOpCreatePreMulSum, host and
 *                                device scalars; the op destroyed right after the call)
 *   preload-interposed scalable  a communicator from ncclCommInitRankScalable
 *   preload-interposed finalize  ncclCommFinalize with calls held: released first, exact
 *   preload-interposed revoke    ncclCommRevoke with calls held on a healthy communicator: they
 *                                are issued to NCCL first, every one (docs/completion-holding.md,
 *                                "A dropped call"); no hang
 *   preload-interposed shrink    3 ranks; ncclCommShrink excluding rank 2 with calls held on the
 *                                parent: released first; the 2-rank child is then scheduled too
 *   preload-interposed initall   one process, ncclCommInitAll over 2 devices, a thread per comm
 * A scenario that needs calls held fails when the preload held none ("nothing held").
 * Prints "rank R: SCENARIO: ... exact" per rank; exit 0 when every rank passed. */
#include <pthread.h>
#include <string.h>

#include "emu_nccl_hooks.h"
#include "pt_check.h"

#define K 6
#define ITERS 40
#define HOLD_FROM 26 /* holding starts after the learned iteration survived 16 starts (~20) */
#define M 96         /* elements of the other collectives' buffers */

#define FAIL PT_FAIL

static size_t count_of(int k)
{
    return 512 + (size_t)k * 160;
}

static float value_of(int r, int k, int it)
{
    return (float)((r + 1) * (k + 1) + it % 3);
}

static float sum_of(int nranks, int k, int it)
{
    float s = 0;
    for (int r = 0; r < nranks; r++)
        s += value_of(r, k, it);
    return s;
}

/* The K all-reduce buffers of one communicator and stream(s). */
struct iter_state {
    int rank, nranks;
    ncclComm_t comm;
    CUstream s[2];
    int two_streams;
    CUdeviceptr buf[K];
    float *host;
    struct emu_held_count held;
};

static int state_init(struct iter_state *st, int rank, int nranks, ncclComm_t comm, int two)
{
    memset(st, 0, sizeof(*st));
    st->rank = rank;
    st->nranks = nranks;
    st->comm = comm;
    st->two_streams = two;
    st->held.comm = comm;
    PT_CU(cuStreamCreate(&st->s[0], CU_STREAM_NON_BLOCKING));
    PT_CU(cuStreamCreate(&st->s[1], CU_STREAM_NON_BLOCKING));
    for (int k = 0; k < K; k++)
        PT_CU(cuMemAlloc(&st->buf[k], count_of(k) * sizeof(float)));
    st->host = malloc(count_of(K) * sizeof(float));
    return st->host == NULL;
}

static void state_fini(struct iter_state *st)
{
    for (int k = 0; k < K; k++)
        cuMemFree(st->buf[k]);
    cuStreamDestroy(st->s[0]);
    cuStreamDestroy(st->s[1]);
    free(st->host);
}

static CUstream stream_of(const struct iter_state *st, int k)
{
    return st->two_streams && k >= K / 2 ? st->s[1] : st->s[0];
}

/* Call k of iteration it: fill, all-reduce, count. */
static int issue(struct iter_state *st, int k, int it)
{
    int rank = st->rank;
    ncclResult_t rc;

    pt_fill(st->buf[k], value_of(rank, k, it), count_of(k), stream_of(st, k));
    rc = ncclAllReduce((void *)st->buf[k], (void *)st->buf[k], count_of(k), ncclFloat32, ncclSum,
                       st->comm, stream_of(st, k));
    if (rc != ncclSuccess)
        FAIL("ncclAllReduce: %s", ncclGetErrorString(rc));
    emu_held_note(&st->held);
    return 0;
}

/* Synchronises and checks calls [0, n) of iteration it. */
static int check(struct iter_state *st, int n, int it)
{
    int rank = st->rank;

    PT_CU(cuStreamSynchronize(st->s[0]));
    PT_CU(cuStreamSynchronize(st->s[1]));
    for (int k = 0; k < n; k++) {
        float want = sum_of(st->nranks, k, it);
        PT_CU(cuMemcpyDtoH(st->host, st->buf[k], count_of(k) * sizeof(float)));
        for (size_t i = 0; i < count_of(k); i++)
            if (st->host[i] != want)
                FAIL("iteration %d call %d element %zu: %g, expected %g", it, k, i,
                     (double)st->host[i], (double)want);
    }
    return 0;
}

static int run_iters(struct iter_state *st, int from, int to)
{
    for (int it = from; it < to; it++) {
        for (int k = 0; k < K; k++)
            if (issue(st, k, it))
                return 1;
        if (check(st, K, it))
            return 1;
    }
    return 0;
}

static int need_held(const struct iter_state *st, const char *what)
{
    int rank = st->rank;

    if (st->held.max <= 0)
        FAIL("%s: nothing held (at most %lld all-reduces): nothing to test", what, st->held.max);
    return 0;
}

/* ---- colls ---------------------------------------------------------------------------------- */

static const char *const other_names[] = {"broadcast", "reduce-scatter", "all-gather", "send/recv",
                                          "reduce"};

struct other {
    CUdeviceptr a, b; /* send (2M floats) and receive (2M floats) */
    float h[2 * M];
};

static int other_issue(struct iter_state *st, struct other *o, int kind, int it)
{
    int rank = st->rank, peer = 1 - rank;
    CUstream s = st->s[0];
    ncclResult_t rc = ncclSuccess;

    pt_fill(o->a, (float)(rank + 1), 2 * M, s);
    pt_fill(o->b, -1.0f, 2 * M, s);
    switch (kind) {
    case 0:
        if (rank == it % 2)
            pt_fill(o->b, (float)(7 + it), M, s);
        rc = ncclBroadcast((void *)o->b, (void *)o->b, M, ncclFloat32, it % 2, st->comm, s);
        break;
    case 1:
        rc = ncclReduceScatter((void *)o->a, (void *)o->b, M, ncclFloat32, ncclSum, st->comm, s);
        break;
    case 2:
        rc = ncclAllGather((void *)o->a, (void *)o->b, M, ncclFloat32, st->comm, s);
        break;
    case 3:
        PT_NCCL(ncclGroupStart());
        PT_NCCL(ncclSend((void *)o->a, M, ncclFloat32, peer, st->comm, s));
        PT_NCCL(ncclRecv((void *)o->b, M, ncclFloat32, peer, st->comm, s));
        rc = ncclGroupEnd();
        break;
    default:
        rc = ncclReduce((void *)o->a, (void *)o->b, M, ncclFloat32, ncclSum, 0, st->comm, s);
        break;
    }
    if (rc != ncclSuccess)
        FAIL("%s: %s", other_names[kind], ncclGetErrorString(rc));
    return 0;
}

static int other_check(struct iter_state *st, struct other *o, int kind, int it)
{
    int rank = st->rank, n = 0;

    PT_CU(cuMemcpyDtoH(o->h, o->b, sizeof(o->h)));
    for (int i = 0; i < 2 * M; i++) {
        float want = -1.0f;
        switch (kind) {
        case 0:
            want = i < M ? (float)(7 + it) : -1.0f;
            break;
        case 1: /* reduce-scatter: block r of the sums; reduce: the sums on root 0 only */
        case 4:
            want = i < M && (kind == 1 || rank == 0) ? 3.0f : -1.0f;
            break;
        case 2:
            want = i < M ? 1.0f : 2.0f;
            break;
        case 3:
            want = i < M ? (float)(2 - rank) : -1.0f;
            break;
        }
        n += o->h[i] != want;
        if (o->h[i] != want)
            FAIL("%s in iteration %d: element %d = %g, expected %g", other_names[kind], it, i,
                 (double)o->h[i], (double)want);
    }
    return n;
}

static int scenario_colls(int rank, int nranks, const ncclUniqueId *id)
{
    CUcontext ctx;
    ncclComm_t comm;
    struct iter_state st;
    struct other o;
    long long most_before = 0;
    int issued = 0;

    pt_rank_setup(rank, nranks, id, &ctx, &comm);
    if (state_init(&st, rank, nranks, comm, 0))
        return 1;
    PT_CU(cuMemAlloc(&o.a, 2 * M * sizeof(float)));
    PT_CU(cuMemAlloc(&o.b, 2 * M * sizeof(float)));
    for (int it = 0; it < ITERS; it++) {
        int kind = it % 5;
        for (int k = 0; k < K; k++) {
            if (issue(&st, k, it))
                return 1;
            if (it >= HOLD_FROM && k == K / 2) {
                long long before = emu_held_now(&st.held), after;
                if (other_issue(&st, &o, kind, it))
                    return 1;
                after = emu_held_now(&st.held);
                if (after != 0)
                    FAIL("%lld all-reduces still held after a %s (held before: %lld)", after,
                         other_names[kind], before);
                if (before > most_before)
                    most_before = before;
                issued++;
            }
        }
        if (check(&st, K, it) || (it >= HOLD_FROM && other_check(&st, &o, kind, it)))
            return 1;
    }
    if (most_before <= 0)
        FAIL("colls: nothing held when the other collectives arrived: nothing to test");
    printf("rank %d: colls: %d broadcast/reduce-scatter/all-gather/send-recv/reduce calls arrived "
           "with up to %lld all-reduces held, each released first; %d iterations exact\n",
           rank, issued, most_before, ITERS);
    cuMemFree(o.a);
    cuMemFree(o.b);
    state_fini(&st);
    PT_NCCL(ncclCommDestroy(comm));
    return 0;
}

/* ---- streams -------------------------------------------------------------------------------- */

static int scenario_streams(int rank, int nranks, const ncclUniqueId *id)
{
    CUcontext ctx;
    ncclComm_t comm;
    struct iter_state st;

    pt_rank_setup(rank, nranks, id, &ctx, &comm);
    if (state_init(&st, rank, nranks, comm, 1) || run_iters(&st, 0, ITERS) ||
        need_held(&st, "streams"))
        return 1;
    printf("rank %d: streams: calls 0-%d on one stream, %d-%d on another, up to %lld held; %d "
           "iterations exact\n",
           rank, K / 2 - 1, K / 2, K - 1, st.held.max, ITERS);
    state_fini(&st);
    PT_NCCL(ncclCommDestroy(comm));
    return 0;
}

/* ---- dtypes --------------------------------------------------------------------------------- */

#define N_ELEM 193
#define OP_PREMUL_HOST -1
#define OP_PREMUL_DEV -2

struct combo {
    ncclDataType_t t;
    int op; /* ncclRedOp_t or OP_PREMUL_* */
    const char *name;
};

/* the PREMUL_SUM calls (never held: custom ops pass through) come in the middle of the learned
 * iteration of the others, where a block is open */
static const struct combo combos[] = {
    {ncclInt8, ncclSum, "int8 sum"},
    {ncclUint8, ncclMax, "uint8 max"},
    {ncclInt32, ncclProd, "int32 prod"},
    {ncclFloat32, OP_PREMUL_HOST, "float32 premul(host 2)"},
    {ncclUint32, ncclMin, "uint32 min"},
    {ncclInt64, ncclSum, "int64 sum"},
    {ncclUint64, ncclProd, "uint64 prod"},
    {ncclFloat64, OP_PREMUL_DEV, "float64 premul(device 0.5)"},
    {ncclFloat16, ncclSum, "float16 sum"},
    {ncclBfloat16, ncclMax, "bfloat16 max"},
    {ncclFloat64, ncclAvg, "float64 avg"},
    {ncclFloat32, ncclMin, "float32 min"},
};
#define N_COMBO ((int)(sizeof(combos) / sizeof(combos[0])))

static size_t dsize(ncclDataType_t t)
{
    switch (t) {
    case ncclInt8:
    case ncclUint8:
        return 1;
    case ncclFloat16:
    case ncclBfloat16:
        return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
        return 4;
    default:
        return 8;
    }
}

/* IEEE half precision by hand (not every compiler has _Float16 on x86-64: Debian 12's clang 14
 * does not): zero and normal numbers only, truncated, which is exact for the values here. */
static uint16_t half_from_float(float f)
{
    uint32_t bits;
    memcpy(&bits, &f, 4);
    uint16_t sign = (uint16_t)(bits >> 16 & 0x8000u);
    int exp = (int)(bits >> 23 & 0xff) - 127 + 15;
    if ((bits & 0x7fffffffu) == 0 || exp <= 0)
        return sign;
    return (uint16_t)(sign | (uint32_t)exp << 10 | (bits & 0x7fffffu) >> 13);
}

static float half_to_float(uint16_t h)
{
    uint32_t bits = (uint32_t)(h & 0x8000u) << 16;
    float f;
    if (h & 0x7fffu)
        bits |= ((uint32_t)(h >> 10 & 0x1f) - 15 + 127) << 23 | (uint32_t)(h & 0x3ffu) << 13;
    memcpy(&f, &bits, 4);
    return f;
}

/* Small integers and halves only: exact in every type here. */
static void put(void *p, ncclDataType_t t, size_t i, double v)
{
    float f = (float)v;
    uint32_t bits;

    switch (t) {
    case ncclInt8:
        ((int8_t *)p)[i] = (int8_t)v;
        break;
    case ncclUint8:
        ((uint8_t *)p)[i] = (uint8_t)v;
        break;
    case ncclInt32:
        ((int32_t *)p)[i] = (int32_t)v;
        break;
    case ncclUint32:
        ((uint32_t *)p)[i] = (uint32_t)v;
        break;
    case ncclInt64:
        ((int64_t *)p)[i] = (int64_t)v;
        break;
    case ncclUint64:
        ((uint64_t *)p)[i] = (uint64_t)v;
        break;
    case ncclFloat16:
        ((uint16_t *)p)[i] = half_from_float(f);
        break;
    case ncclBfloat16: /* the top half of a float32 whose low mantissa bits are 0 */
        memcpy(&bits, &f, 4);
        ((uint16_t *)p)[i] = (uint16_t)(bits >> 16);
        break;
    case ncclFloat32:
        ((float *)p)[i] = f;
        break;
    default:
        ((double *)p)[i] = v;
        break;
    }
}

static double get(const void *p, ncclDataType_t t, size_t i)
{
    uint32_t bits;
    float f;

    switch (t) {
    case ncclInt8:
        return ((const int8_t *)p)[i];
    case ncclUint8:
        return ((const uint8_t *)p)[i];
    case ncclInt32:
        return ((const int32_t *)p)[i];
    case ncclUint32:
        return ((const uint32_t *)p)[i];
    case ncclInt64:
        return (double)((const int64_t *)p)[i];
    case ncclUint64:
        return (double)((const uint64_t *)p)[i];
    case ncclFloat16:
        return half_to_float(((const uint16_t *)p)[i]);
    case ncclBfloat16:
        bits = (uint32_t)((const uint16_t *)p)[i] << 16;
        memcpy(&f, &bits, 4);
        return f;
    case ncclFloat32:
        return ((const float *)p)[i];
    default:
        return ((const double *)p)[i];
    }
}

static double dvalue(int r, int c, int it, size_t i)
{
    return (double)(r + 1 + (c + it + (int)i) % 3);
}

static double dexpect(const struct combo *cb, int nranks, int c, int it, size_t i)
{
    double acc = dvalue(0, c, it, i);

    for (int r = 1; r < nranks; r++) {
        double v = dvalue(r, c, it, i);
        switch (cb->op) {
        case ncclProd:
            acc *= v;
            break;
        case ncclMax:
            acc = v > acc ? v : acc;
            break;
        case ncclMin:
            acc = v < acc ? v : acc;
            break;
        default:
            acc += v;
        }
    }
    if (cb->op == ncclAvg)
        acc /= nranks;
    if (cb->op == OP_PREMUL_HOST)
        acc *= 2.0;
    if (cb->op == OP_PREMUL_DEV)
        acc *= 0.5;
    return acc;
}

static int scenario_dtypes(int rank, int nranks, const ncclUniqueId *id)
{
    CUcontext ctx;
    ncclComm_t comm;
    CUstream s;
    CUdeviceptr buf[N_COMBO], dev_scalar;
    unsigned char host[N_ELEM * 8];
    struct emu_held_count held = {0};
    long long premul_before = 0;
    double half = 0.5;
    float two = 2.0f;
    ncclRedOp_t dev_op;

    pt_rank_setup(rank, nranks, id, &ctx, &comm);
    held.comm = comm;
    PT_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    for (int c = 0; c < N_COMBO; c++)
        PT_CU(cuMemAlloc(&buf[c], N_ELEM * dsize(combos[c].t)));
    PT_CU(cuMemAlloc(&dev_scalar, sizeof(double)));
    PT_CU(cuMemcpyHtoD(dev_scalar, &half, sizeof(half)));
    PT_NCCL(
        ncclRedOpCreatePreMulSum(&dev_op, (void *)dev_scalar, ncclFloat64, ncclScalarDevice, comm));
    for (int it = 0; it < ITERS; it++) {
        for (int c = 0; c < N_COMBO; c++) {
            const struct combo *cb = &combos[c];
            ncclRedOp_t op = (ncclRedOp_t)cb->op;
            long long before = emu_held_now(&held);
            for (size_t i = 0; i < N_ELEM; i++)
                put(host, cb->t, i, dvalue(rank, c, it, i));
            PT_CU(cuMemcpyHtoDAsync(buf[c], host, N_ELEM * dsize(cb->t), s));
            PT_CU(cuStreamSynchronize(s)); /* host staging reused */
            if (cb->op == OP_PREMUL_HOST)  /* PyTorch: made per call, destroyed after it */
                PT_NCCL(ncclRedOpCreatePreMulSum(&op, &two, ncclFloat32, ncclScalarHostImmediate,
                                                 comm));
            if (cb->op == OP_PREMUL_DEV)
                op = dev_op;
            PT_NCCL(ncclAllReduce((void *)buf[c], (void *)buf[c], N_ELEM, cb->t, op, comm, s));
            emu_held_note(&held);
            if (cb->op == OP_PREMUL_HOST)
                PT_NCCL(ncclRedOpDestroy(op, comm));
            if (cb->op < 0) { /* a custom op is never held: what was held went first */
                if (emu_held_now(&held) != 0)
                    FAIL("%lld all-reduces held after a %s", emu_held_now(&held), cb->name);
                if (before > premul_before)
                    premul_before = before;
            }
        }
        PT_CU(cuStreamSynchronize(s));
        for (int c = 0; c < N_COMBO; c++) {
            PT_CU(cuMemcpyDtoH(host, buf[c], N_ELEM * dsize(combos[c].t)));
            for (size_t i = 0; i < N_ELEM; i++) {
                double want = dexpect(&combos[c], nranks, c, it, i),
                       got = get(host, combos[c].t, i);
                if (got != want)
                    FAIL("%s iteration %d element %zu: %g, expected %g", combos[c].name, it, i, got,
                         want);
            }
        }
    }
    if (held.max <= 0 || premul_before <= 0)
        FAIL("dtypes: nothing held (at most %lld; before a PREMUL_SUM %lld): nothing to test",
             held.max, premul_before);
    printf("rank %d: dtypes: %d type/op pairs incl. PREMUL_SUM, up to %lld held (%lld before a "
           "PREMUL_SUM, released first); %d iterations exact\n",
           rank, N_COMBO, held.max, premul_before, ITERS);
    PT_NCCL(ncclRedOpDestroy(dev_op, comm));
    PT_NCCL(ncclCommDestroy(comm));
    return 0;
}

/* ---- life cycle ----------------------------------------------------------------------------- */

static int scenario_scalable(int rank, int nranks, const ncclUniqueId *id)
{
    CUcontext ctx;
    ncclComm_t comm;
    struct iter_state st;
    ncclUniqueId ids[1] = {*id};
    CUdevice dev;

    PT_CU(cuInit(0));
    PT_CU(cuDeviceGet(&dev, 0));
    PT_CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    PT_CU(cuCtxSetCurrent(ctx));
    PT_NCCL(ncclCommInitRankScalable(&comm, nranks, rank, 1, ids, NULL));
    if (state_init(&st, rank, nranks, comm, 0) || run_iters(&st, 0, ITERS) ||
        need_held(&st, "scalable"))
        return 1;
    printf("rank %d: scalable: up to %lld held; %d iterations exact\n", rank, st.held.max, ITERS);
    state_fini(&st);
    PT_NCCL(ncclCommDestroy(comm));
    return 0;
}

/* Runs HOLD_FROM + 4 iterations, then half of one more: returns what is held then. */
static long long half_iteration(struct iter_state *st, int *it)
{
    if (run_iters(st, 0, HOLD_FROM + 4))
        return -1;
    *it = HOLD_FROM + 4;
    for (int k = 0; k < K / 2; k++)
        if (issue(st, k, *it))
            return -1;
    return emu_held_now(&st->held);
}

static int scenario_finalize(int rank, int nranks, const ncclUniqueId *id)
{
    CUcontext ctx;
    ncclComm_t comm;
    struct iter_state st;
    long long before, after;
    int it;

    pt_rank_setup(rank, nranks, id, &ctx, &comm);
    if (state_init(&st, rank, nranks, comm, 0) || (before = half_iteration(&st, &it)) < 0)
        return 1;
    if (before <= 0)
        FAIL("finalize: nothing held before ncclCommFinalize: nothing to test");
    PT_NCCL(ncclCommFinalize(comm));
    after = emu_held_now(&st.held);
    if (after != 0)
        FAIL("finalize: %lld of %lld held calls never reached NCCL", after, before);
    if (check(&st, K / 2, it))
        return 1;
    PT_NCCL(ncclCommDestroy(comm));
    printf("rank %d: finalize: %lld held calls released by ncclCommFinalize, exact\n", rank,
           before);
    state_fini(&st);
    return 0;
}

static int scenario_revoke(int rank, int nranks, const ncclUniqueId *id)
{
    CUcontext ctx;
    ncclComm_t comm;
    struct iter_state st;
    unsigned long long reached;
    long long before;
    ncclResult_t rc;
    int it;

    pt_rank_setup(rank, nranks, id, &ctx, &comm);
    if (state_init(&st, rank, nranks, comm, 0) || (before = half_iteration(&st, &it)) < 0)
        return 1;
    if (before <= 0)
        FAIL("revoke: nothing held before ncclCommRevoke: nothing to test");
    reached = emu_nccl_reached(comm);
    rc = ncclCommRevoke(comm, 0);
    if (rc != ncclSuccess)
        FAIL("ncclCommRevoke: %s", ncclGetErrorString(rc));
    /* a healthy comm: the held calls are issued to NCCL first (as they would have been in flight
     * without the preload), every one of them, and nothing else */
    if (emu_nccl_reached(comm) - reached != (unsigned long long)before)
        FAIL("revoke: %llu of the %lld held calls reached NCCL before the revoke",
             emu_nccl_reached(comm) - reached, before);
    cuStreamSynchronize(st.s[0]); /* whatever it reports: no hang */
    PT_NCCL(ncclCommDestroy(comm));
    printf("rank %d: revoke: %lld held calls issued before the revoke\n", rank, before);
    state_fini(&st);
    return 0;
}

static int scenario_shrink(int rank, int nranks, const ncclUniqueId *id)
{
    CUcontext ctx;
    ncclComm_t comm, child = NULL;
    struct iter_state st, cst;
    int exclude[1] = {nranks - 1}, it;
    long long before, after;

    pt_rank_setup(rank, nranks, id, &ctx, &comm);
    if (state_init(&st, rank, nranks, comm, 0) || (before = half_iteration(&st, &it)) < 0)
        return 1;
    if (before <= 0)
        FAIL("shrink: nothing held before ncclCommShrink: nothing to test");
    PT_NCCL(ncclCommShrink(comm, exclude, 1, &child, NULL, 0));
    after = emu_held_now(&st.held);
    if (after != 0)
        FAIL("shrink: %lld of %lld held calls not released before ncclCommShrink", after, before);
    if (check(&st, K / 2, it))
        return 1;
    if (rank == nranks - 1) {
        if (child)
            FAIL("shrink: the excluded rank got a communicator");
        printf("rank %d: shrink: %lld held calls released first; excluded, exact\n", rank, before);
    } else {
        if (!child || state_init(&cst, rank, nranks - 1, child, 0) || run_iters(&cst, 0, ITERS) ||
            need_held(&cst, "shrink (child)"))
            return 1;
        printf("rank %d: shrink: %lld held calls released first; the %d-rank child held up to "
               "%lld; %d iterations exact\n",
               rank, before, nranks - 1, cst.held.max, ITERS);
        state_fini(&cst);
        PT_NCCL(ncclCommDestroy(child));
    }
    state_fini(&st);
    PT_NCCL(ncclCommDestroy(comm));
    return 0;
}

struct initall_arg {
    int dev, ndev;
    ncclComm_t comm;
    int rc;
    long long held;
};

static int initall_drive(struct initall_arg *a)
{
    CUcontext ctx;
    CUdevice dev;
    struct iter_state st;

    PT_CU(cuDeviceGet(&dev, a->dev));
    PT_CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    PT_CU(cuCtxSetCurrent(ctx));
    if (state_init(&st, a->dev, a->ndev, a->comm, 0) || run_iters(&st, 0, ITERS) ||
        need_held(&st, "initall"))
        return 1;
    a->held = st.held.max;
    state_fini(&st);
    return 0;
}

static void *initall_thread(void *p)
{
    struct initall_arg *a = p;

    a->rc = initall_drive(a);
    return NULL;
}

static int scenario_initall(void)
{
    enum { NDEV = 2 };
    ncclComm_t comms[NDEV];
    struct initall_arg a[NDEV];
    pthread_t th[NDEV];
    int ndev = 0, bad = 0;

    PT_CU(cuInit(0));
    PT_CU(cuDeviceGetCount(&ndev));
    if (ndev < NDEV) {
        fprintf(stderr, "FAIL: %d devices\n", ndev);
        return 1;
    }
    PT_NCCL(ncclCommInitAll(comms, NDEV, NULL));
    for (int d = 0; d < NDEV; d++) {
        a[d] = (struct initall_arg){d, NDEV, comms[d], 1, 0};
        if (pthread_create(&th[d], NULL, initall_thread, &a[d]))
            return 1;
    }
    for (int d = 0; d < NDEV; d++) {
        pthread_join(th[d], NULL);
        bad |= a[d].rc;
        if (!a[d].rc)
            printf("rank %d: initall: one process, comm %d of %d, up to %lld held; %d iterations "
                   "exact\n",
                   d, d, NDEV, a[d].held, ITERS);
    }
    for (int d = 0; d < NDEV; d++)
        PT_NCCL(ncclCommDestroy(comms[d]));
    return bad;
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        int (*fn)(int, int, const ncclUniqueId *);
        int nranks;
    } s[] = {{"colls", scenario_colls, 2},       {"streams", scenario_streams, 2},
             {"dtypes", scenario_dtypes, 2},     {"scalable", scenario_scalable, 2},
             {"finalize", scenario_finalize, 2}, {"revoke", scenario_revoke, 2},
             {"shrink", scenario_shrink, 3}};

    if (argc == 2 && !strcmp(argv[1], "initall"))
        return scenario_initall();
    for (size_t i = 0; argc == 2 && i < sizeof(s) / sizeof(s[0]); i++)
        if (!strcmp(argv[1], s[i].name))
            return pt_run_ranks(s[i].nranks, s[i].fn);
    fprintf(stderr, "usage: preload-interposed colls|streams|dtypes|scalable|finalize|revoke|"
                    "shrink|initall\n");
    return 2;
}
