/* The fused ring pass: runs one group of operations of one communicator on a stream thread.
 *
 * Collectives of the group share one schedule of 2(N-1) ring steps; in every step each rank sends
 * one message to rank r+1 and receives one from rank r-1, made of every operation's segment for
 * that step (chunk j of an operation is the j-th of N balanced slices of its count):
 *   all-reduce     steps 0..N-2 reduce-scatter (send chunk r-s-1, receive and reduce chunk r-s-2),
 *                  steps N-1..2N-3 all-gather (send chunk r-t, receive chunk r-t-1).
 *   reduce-scatter the reduce-scatter half of all-reduce (rank r keeps chunk r).
 *   all-gather     steps 0..N-2 (send block r-t, receive block r-t-1).
 *   broadcast      pipelined along the ring from the root in N chunks: 2(N-1) steps.
 *   reduce         pipelined towards the root in N chunks: 2(N-1) steps.
 * Summation order (all reducing collectives): chunk j is reduced along the ring starting at rank
 * j+1 and ending at rank j: ((x[j+1] op x[j+2]) op ...) op x[j]; for reduce, j is the root. The
 * result is computed once and copied, so every rank gets the same bits. Avg = sum, then / N.
 * Send/receive run after the collectives, all at once, over the direct socket to each peer. */
#include "emu_dtype.h"
#include "emu_nccl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

struct emu_wire_hdr {
    uint64_t magic;
    uint64_t hash;
    uint64_t seq;
    uint32_t nops;
    int32_t rank;
};

struct emu_wire_op {
    uint32_t type;
    uint32_t dtype;
    uint32_t redop;
    int32_t root;
    uint64_t count;
};

struct emu_wire_p2p {
    uint64_t seq;
    uint64_t bytes;
    int32_t from;
    int32_t dtype;
};

static const char *op_name(int type)
{
    static const char *const names[] = {"allreduce",     "broadcast", "reduce", "allgather",
                                        "reducescatter", "send",      "recv"};
    return type >= 0 && type <= EMU_OP_RECV ? names[type] : "?";
}

static int op_reduces(int type)
{
    return type == EMU_OP_ALLREDUCE || type == EMU_OP_REDUCE || type == EMU_OP_REDUCESCATTER;
}

static int op_rooted(int type)
{
    return type == EMU_OP_BROADCAST || type == EMU_OP_REDUCE;
}

void emu_describe_op(char *buf, size_t len, int type, uint64_t seq, size_t count, int dtype,
                     int redop, int root)
{
    int n = snprintf(buf, len, "%s #%llu count=%zu %s", op_name(type), (unsigned long long)seq,
                     count, emu_dtype_name(dtype));
    if (n < 0 || (size_t)n >= len)
        return;
    if (op_reduces(type))
        n += snprintf(buf + n, len - (size_t)n, " %s", emu_redop_name(redop));
    if (op_rooted(type) && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, " root=%d", root);
    else if ((type == EMU_OP_SEND || type == EMU_OP_RECV) && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, " peer=%d", root);
}

static int mod(int a, int n)
{
    return ((a % n) + n) % n;
}

/* Chunk j of `count` elements split in n balanced slices. */
static void chunk(size_t count, int n, int j, size_t *off, size_t *len)
{
    size_t q = count / (size_t)n, rem = count % (size_t)n, uj = (size_t)j;
    *off = uj * q + (uj < rem ? uj : rem);
    *len = q + (uj < rem ? 1 : 0);
}

/* Per-operation state of a pass. */
struct emu_opstate {
    struct emu_op *op;
    size_t esize;
    char *tmp;     /* intermediate sums (reduce, reduce-scatter) */
    char *staging; /* received partial sums of one step */
    int n;         /* ranks (for avg) */
};

/* A reduction to do once a step's data arrived. */
struct emu_post {
    struct emu_opstate *st;
    char *dst;
    const char *acc;
    const char *own;
    size_t count;
    int divide;   /* avg: final value */
    size_t start; /* byte offset of the data in the step's received message */
    size_t done;  /* elements reduced so far */
};

struct emu_step {
    struct iovec *send, *recv;
    int nsend, nrecv;
    size_t recv_bytes;
    struct emu_post *post;
    int npost;
};

static void add_iov(struct iovec *v, int *n, const void *base, size_t len)
{
    if (len == 0)
        return;
    v[*n].iov_base = (void *)base;
    v[*n].iov_len = len;
    (*n)++;
}

static void add_recv(struct emu_step *st, void *base, size_t len)
{
    add_iov(st->recv, &st->nrecv, base, len);
    st->recv_bytes += len;
}

/* Reduces every element of the step whose bytes have all arrived (called as data comes in). */
static void step_progress(void *arg, size_t received)
{
    struct emu_step *st = arg;

    for (int k = 0; k < st->npost; k++) {
        struct emu_post *p = &st->post[k];
        size_t es = p->st->esize, upto, n;
        if (received <= p->start)
            break;
        upto = (received - p->start) / es;
        if (upto > p->count)
            upto = p->count;
        if (upto <= p->done)
            continue;
        n = upto - p->done;
        emu_reduce(p->dst + p->done * es, p->acc + p->done * es, p->own + p->done * es, n,
                   p->st->op->dtype, p->st->op->redop);
        if (p->divide)
            emu_divide(p->dst + p->done * es, n, p->st->op->dtype, p->st->n);
        p->done = upto;
    }
}

static void add_reduce(struct emu_step *st, struct emu_opstate *os, char *dst, size_t elem_off,
                       size_t n, const char *own, int divide)
{
    if (n == 0)
        return;
    st->post[st->npost++] = (struct emu_post){
        os, dst, os->staging, own + elem_off * os->esize, n, divide, st->recv_bytes, 0};
    add_recv(st, os->staging, n * os->esize);
}

/* Adds operation os's part of step s at rank r of n. */
static void op_step(struct emu_opstate *os, int s, int r, int n, struct emu_step *st)
{
    struct emu_op *op = os->op;
    const char *sb = op->sendbuff;
    char *rb = op->recvbuff;
    size_t es = os->esize, off, len;
    int avg = op->redop == ncclAvg;

    switch (op->type) {
    case EMU_OP_ALLREDUCE:
        if (s <= n - 2) {
            chunk(op->count, n, mod(r - s - 1, n), &off, &len);
            add_iov(st->send, &st->nsend, (s == 0 ? sb : rb) + off * es, len * es);
            chunk(op->count, n, mod(r - s - 2, n), &off, &len);
            add_reduce(st, os, rb + off * es, off, len, sb, avg && s == n - 2);
        } else {
            int t = s - (n - 1);
            chunk(op->count, n, mod(r - t, n), &off, &len);
            add_iov(st->send, &st->nsend, rb + off * es, len * es);
            chunk(op->count, n, mod(r - t - 1, n), &off, &len);
            add_recv(st, rb + off * es, len * es);
        }
        break;
    case EMU_OP_REDUCESCATTER:
        if (s <= n - 2) {
            size_t c = op->count;
            size_t a = (size_t)mod(r - s - 1, n), b = (size_t)mod(r - s - 2, n);
            /* intermediate sums alternate between two halves of tmp: step s reduces into one
             * half while it still sends the other (reductions overlap the transfer) */
            char *prev_tmp = os->tmp + (size_t)((s + 1) % 2) * c * es;
            char *cur_tmp = os->tmp + (size_t)(s % 2) * c * es;
            add_iov(st->send, &st->nsend, s == 0 ? sb + a * c * es : prev_tmp, c * es);
            add_reduce(st, os, s == n - 2 ? rb : cur_tmp, b * c, c, sb, avg && s == n - 2);
        }
        break;
    case EMU_OP_ALLGATHER:
        if (s <= n - 2) {
            size_t c = op->count;
            add_iov(st->send, &st->nsend, rb + (size_t)mod(r - s, n) * c * es, c * es);
            add_recv(st, rb + (size_t)mod(r - s - 1, n) * c * es, c * es);
        }
        break;
    case EMU_OP_BROADCAST: {
        int d = mod(r - op->root, n);
        if (d < n - 1 && s - d >= 0 && s - d < n) {
            chunk(op->count, n, s - d, &off, &len);
            add_iov(st->send, &st->nsend, rb + off * es, len * es);
        }
        if (d >= 1 && s - d + 1 >= 0 && s - d + 1 < n) {
            chunk(op->count, n, s - d + 1, &off, &len);
            add_recv(st, rb + off * es, len * es);
        }
        break;
    }
    case EMU_OP_REDUCE: {
        int e = mod(r - op->root - 1, n);
        if (e < n - 1 && s - e >= 0 && s - e < n) {
            chunk(op->count, n, s - e, &off, &len);
            add_iov(st->send, &st->nsend, (e == 0 ? sb : os->tmp) + off * es, len * es);
        }
        if (e >= 1 && s - e + 1 >= 0 && s - e + 1 < n) {
            chunk(op->count, n, s - e + 1, &off, &len);
            add_reduce(st, os, (e == n - 1 ? rb : os->tmp) + off * es, off, len, sb,
                       avg && e == n - 1);
        }
        break;
    }
    default:
        break;
    }
}

/* Work before the steps (local copies) and the whole operation when n == 1. */
static void op_prepare(struct emu_opstate *os, int r, int n)
{
    struct emu_op *op = os->op;
    size_t bytes = op->count * os->esize;

    switch (op->type) {
    case EMU_OP_ALLREDUCE:
    case EMU_OP_REDUCE:
        if (n == 1 && op->sendbuff != op->recvbuff)
            memmove(op->recvbuff, op->sendbuff, bytes);
        break;
    case EMU_OP_REDUCESCATTER:
        if (n == 1 && op->sendbuff != op->recvbuff)
            memmove(op->recvbuff, op->sendbuff, bytes);
        break;
    case EMU_OP_ALLGATHER:
        if ((const char *)op->recvbuff + (size_t)r * bytes != op->sendbuff)
            memmove((char *)op->recvbuff + (size_t)r * bytes, op->sendbuff, bytes);
        break;
    case EMU_OP_BROADCAST:
        if (r == op->root && op->sendbuff != op->recvbuff)
            memmove(op->recvbuff, op->sendbuff, bytes);
        break;
    default:
        break;
    }
}

static void sleep_us(int64_t us)
{
    struct timespec ts = {us / 1000000, (long)(us % 1000000) * 1000};
    while (us > 0 && nanosleep(&ts, &ts) != 0)
        ;
}

static void report_failure(struct emu_comm *c, ncclResult_t err, int peer, const char *what)
{
    const char *why = err == ncclRemoteError   ? "connection closed by the peer"
                      : err == ncclSystemError ? "socket error or timeout"
                                               : "communicator aborted";
    if (err == ncclInvalidUsage && atomic_load(&c->aborted))
        return; /* the user aborted: no message */
    fprintf(stderr, "emu-nccl: comm 0x%llx rank %d: %s failed with rank %d: %s\n",
            (unsigned long long)c->hash, c->rank, what, peer, why);
    emu_set_last_error("emu-nccl: %s failed with rank %d: %s", what, peer, why);
}

/* Sends our header to the next rank, checks the previous rank's. */
static ncclResult_t exchange_header(struct emu_comm *c, struct emu_op **ops, int nops, uint64_t seq)
{
    int n = c->nranks, next = (c->rank + 1) % n, prev = (c->rank + n - 1) % n, bad = -1;
    struct emu_wire_hdr mine = {EMU_ID_MAGIC, c->hash, seq, (uint32_t)nops, c->rank}, theirs;
    struct emu_wire_op *wm = calloc((size_t)nops, sizeof(*wm)), *wt = NULL;
    struct iovec siov[2] = {{&mine, sizeof(mine)}, {wm, (size_t)nops * sizeof(*wm)}};
    struct iovec riov[1] = {{&theirs, sizeof(theirs)}};
    struct emu_xfer x[2] = {{c->out_fd[next], 1, next, siov, 2, 0, 0, 0, NULL, NULL},
                            {c->in_fd[prev], 0, prev, riov, 1, 0, 0, 0, NULL, NULL}};
    ncclResult_t rc;
    int diff = -1;
    char a[160], b[160];

    if (!wm)
        return ncclSystemError;
    for (int i = 0; i < nops; i++) {
        wm[i] = (struct emu_wire_op){(uint32_t)ops[i]->type, (uint32_t)ops[i]->dtype,
                                     (uint32_t)ops[i]->redop, ops[i]->root, ops[i]->count};
        if (!op_reduces(ops[i]->type))
            wm[i].redop = 0;
        if (!op_rooted(ops[i]->type))
            wm[i].root = -1;
    }
    rc = emu_xfer_run(c, x, 2, &bad);
    if (rc != ncclSuccess)
        goto fail;
    if (theirs.magic != EMU_ID_MAGIC || theirs.hash != c->hash || theirs.nops > 65536) {
        rc = ncclSystemError;
        bad = prev;
        goto fail;
    }
    wt = calloc(theirs.nops ? theirs.nops : 1, sizeof(*wt));
    if (!wt) {
        rc = ncclSystemError;
        goto out;
    }
    riov[0] = (struct iovec){wt, theirs.nops * sizeof(*wt)};
    rc = emu_xfer_run(c, &x[1], 1, &bad);
    if (rc != ncclSuccess)
        goto fail;
    if (theirs.seq != seq || theirs.nops != (uint32_t)nops)
        diff = 0;
    for (int i = 0; diff < 0 && i < nops; i++) {
        if (memcmp(&wm[i], &wt[i], sizeof(wm[i])) != 0)
            diff = i;
    }
    if (diff >= 0) {
        int i = diff;
        emu_describe_op(a, sizeof(a), (int)wm[i].type, seq + (uint64_t)i, wm[i].count,
                        (int)wm[i].dtype, (int)wm[i].redop, wm[i].root);
        if ((uint32_t)i < theirs.nops)
            emu_describe_op(b, sizeof(b), (int)wt[i].type, theirs.seq + (uint64_t)i, wt[i].count,
                            (int)wt[i].dtype, (int)wt[i].redop, wt[i].root);
        else
            snprintf(b, sizeof(b), "nothing at #%llu", (unsigned long long)(seq + (uint64_t)i));
        fprintf(stderr,
                "emu-nccl: collective mismatch on comm 0x%llx: rank %d issued %s%s; rank %d "
                "issued %s%s\n",
                (unsigned long long)c->hash, c->rank, a, nops > 1 ? " (in a group)" : "", prev, b,
                theirs.nops > 1 ? " (in a group)" : "");
        emu_set_last_error("emu-nccl: collective mismatch: rank %d issued %s; rank %d issued %s",
                           c->rank, a, prev, b);
        rc = ncclInvalidUsage;
        goto out;
    }
    goto out;
fail:
    emu_describe_op(a, sizeof(a), ops[0]->type, seq, ops[0]->count, ops[0]->dtype, ops[0]->redop,
                    ops[0]->root);
    report_failure(c, rc, bad, a);
out:
    free(wm);
    free(wt);
    return rc;
}

/* Runs the collectives of a group (all ranks issue the same list). */
/* PreMulSum: each rank's input times the scalar into a copy, then a plain sum. The op is
 * changed for this run only (captured work runs again): restore_premul undoes it. */
static ncclResult_t apply_premul(struct emu_op *op, int n, void **copy)
{
    size_t elems = op->type == EMU_OP_REDUCESCATTER ? op->count * (size_t)n : op->count;
    double s =
        op->premul_device_ptr ? emu_to_double(op->premul_device_ptr, op->dtype) : op->premul_scalar;

    *copy = malloc(elems * emu_dtype_size(op->dtype) + 1);
    if (!*copy)
        return ncclSystemError;
    emu_scale(*copy, op->sendbuff, elems, op->dtype, s);
    op->sendbuff = *copy;
    op->redop = ncclSum;
    return ncclSuccess;
}

static ncclResult_t run_collectives(struct emu_comm *c, struct emu_op **ops, int nops)
{
    int n = c->nranks, r = c->rank, next = (r + 1) % n, prev = (r + n - 1) % n, bad = -1;
    uint64_t seq = c->coll_seq;
    struct emu_opstate *os = calloc((size_t)nops, sizeof(*os));
    struct emu_step st = {0};
    ncclResult_t rc = ncclSuccess;
    void **premul_copy = calloc((size_t)nops, sizeof(void *));
    struct emu_op *saved = calloc((size_t)nops, sizeof(*saved));

    c->coll_seq += (uint64_t)nops;
    st.send = calloc((size_t)nops * 2 + 1, sizeof(struct iovec));
    st.recv = calloc((size_t)nops * 2 + 1, sizeof(struct iovec));
    st.post = calloc((size_t)nops + 1, sizeof(struct emu_post));
    if (!os || !st.send || !st.recv || !st.post || !premul_copy || !saved) {
        rc = ncclSystemError;
        goto out;
    }
    if (n > 1) {
        rc = exchange_header(c, ops, nops, seq);
        if (rc != ncclSuccess)
            goto out;
    }
    for (int i = 0; i < nops; i++) {
        saved[i] = *ops[i];
        if (ops[i]->premul && op_reduces(ops[i]->type) &&
            (rc = apply_premul(ops[i], n, &premul_copy[i])) != ncclSuccess)
            goto out;
    }
    if (emu_latency_us())
        sleep_us(emu_latency_us());
    for (int i = 0; i < nops; i++) {
        size_t per = ops[i]->count / (size_t)n + 1;
        os[i].op = ops[i];
        os[i].esize = emu_dtype_size(ops[i]->dtype);
        os[i].n = n;
        op_prepare(&os[i], r, n);
        if (n == 1 || !op_reduces(ops[i]->type))
            continue;
        if (ops[i]->type == EMU_OP_REDUCESCATTER)
            per = ops[i]->count;
        os[i].staging = malloc(per * os[i].esize + 1);
        os[i].tmp =
            malloc((ops[i]->type == EMU_OP_REDUCE ? ops[i]->count : 2 * per) * os[i].esize + 1);
        if (!os[i].staging || !os[i].tmp) {
            rc = ncclSystemError;
            goto out;
        }
    }
    for (int s = 0; n > 1 && s < 2 * (n - 1); s++) {
        struct emu_xfer x[2] = {{c->out_fd[next], 1, next, st.send, 0, 0, 0, 0, NULL, NULL},
                                {c->in_fd[prev], 0, prev, st.recv, 0, 0, 0, 0, step_progress, &st}};
        st.nsend = st.nrecv = st.npost = 0;
        st.recv_bytes = 0;
        for (int i = 0; i < nops; i++)
            op_step(&os[i], s, r, n, &st);
        x[0].iovcnt = st.nsend;
        x[1].iovcnt = st.nrecv;
        rc = emu_xfer_run(c, x, 2, &bad);
        if (rc != ncclSuccess) {
            char a[160];
            emu_describe_op(a, sizeof(a), ops[0]->type, seq, ops[0]->count, ops[0]->dtype,
                            ops[0]->redop, ops[0]->root);
            report_failure(c, rc, bad, a);
            goto out;
        }
        step_progress(&st, st.recv_bytes); /* whatever is left (e.g. empty transfers) */
    }
out:
    for (int i = 0; os && i < nops; i++) {
        free(os[i].staging);
        free(os[i].tmp);
    }
    for (int i = 0; premul_copy && saved && i < nops; i++)
        if (premul_copy[i]) {
            *ops[i] = saved[i];
            free(premul_copy[i]);
        }
    free(premul_copy);
    free(saved);
    free(os);
    free(st.send);
    free(st.recv);
    free(st.post);
    return rc;
}

/* Runs the sends and receives of a group: headers first (checked), then the data. */
static ncclResult_t run_p2p(struct emu_comm *c, struct emu_op **ops, int nops, int have_coll)
{
    int n = c->nranks, nx = 0, bad = -1;
    struct emu_wire_p2p *hdr = calloc((size_t)nops + 1, sizeof(*hdr));
    struct iovec *iov = calloc((size_t)nops + 1, sizeof(*iov));
    struct emu_xfer *x = calloc((size_t)n * 2 + 1, sizeof(*x));
    ncclResult_t rc = ncclSuccess;
    char a[160];

    if (!hdr || !iov || !x) {
        rc = ncclSystemError;
        goto out;
    }
    if (!have_coll && emu_latency_us())
        sleep_us(emu_latency_us());
    /* self: k-th send to self goes to k-th receive from self */
    for (int i = 0, k = 0; i < nops; i++) {
        size_t bytes;
        if (ops[i]->type != EMU_OP_SEND || ops[i]->root != c->rank)
            continue;
        while (k < nops && !(ops[k]->type == EMU_OP_RECV && ops[k]->root == c->rank))
            k++;
        bytes = ops[i]->count * emu_dtype_size(ops[i]->dtype);
        if (k == nops || bytes != ops[k]->count * emu_dtype_size(ops[k]->dtype)) {
            fprintf(stderr, "emu-nccl: comm 0x%llx rank %d: send to self without a matching recv\n",
                    (unsigned long long)c->hash, c->rank);
            rc = ncclInvalidUsage;
            goto out;
        }
        memmove(ops[k]->recvbuff, ops[i]->sendbuff, bytes);
        k++;
    }
    /* phase 1: headers, one per operation, in order per peer */
    for (int pass = 0; pass < 2; pass++) {
        int base = 0;
        nx = 0;
        for (int p = 0; p < n; p++) {
            for (int dir = 1; dir >= 0; dir--) {
                int type = dir ? EMU_OP_SEND : EMU_OP_RECV, start = base, any = 0;
                if (p == c->rank)
                    continue;
                for (int i = 0; i < nops; i++) {
                    if (ops[i]->type != type || ops[i]->root != p)
                        continue;
                    size_t bytes = ops[i]->count * emu_dtype_size(ops[i]->dtype);
                    any = 1;
                    if (pass == 0) {
                        if (dir) {
                            hdr[base] = (struct emu_wire_p2p){c->p2p_send_seq[p]++, bytes, c->rank,
                                                              ops[i]->dtype};
                        }
                        iov[base] = (struct iovec){&hdr[base], sizeof(hdr[base])};
                    } else {
                        iov[base] = (struct iovec){
                            dir ? (void *)ops[i]->sendbuff : ops[i]->recvbuff, bytes};
                    }
                    base++;
                }
                if (any)
                    x[nx++] = (struct emu_xfer){dir ? c->out_fd[p] : c->in_fd[p],
                                                dir,
                                                p,
                                                &iov[start],
                                                base - start,
                                                0,
                                                0,
                                                0,
                                                NULL,
                                                NULL};
            }
        }
        rc = emu_xfer_run(c, x, nx, &bad);
        if (rc != ncclSuccess) {
            snprintf(a, sizeof(a), "send/recv (%s)", pass ? "data" : "header");
            report_failure(c, rc, bad, a);
            goto out;
        }
        if (pass == 1)
            break;
        /* check what the peers announced against what we expect to receive */
        base = 0;
        for (int p = 0; p < n; p++) {
            for (int dir = 1; dir >= 0; dir--) {
                if (p == c->rank)
                    continue;
                for (int i = 0; i < nops; i++) {
                    if (ops[i]->type != (dir ? EMU_OP_SEND : EMU_OP_RECV) || ops[i]->root != p)
                        continue;
                    if (!dir) {
                        size_t bytes = ops[i]->count * emu_dtype_size(ops[i]->dtype);
                        uint64_t want = c->p2p_recv_seq[p]++;
                        if (hdr[base].seq != want || hdr[base].bytes != bytes ||
                            hdr[base].from != p) {
                            emu_describe_op(a, sizeof(a), EMU_OP_RECV, want, ops[i]->count,
                                            ops[i]->dtype, 0, p);
                            fprintf(stderr,
                                    "emu-nccl: send/recv mismatch on comm 0x%llx: rank %d issued "
                                    "%s (%zu bytes); rank %d issued send #%llu of %llu bytes\n",
                                    (unsigned long long)c->hash, c->rank, a, bytes, p,
                                    (unsigned long long)hdr[base].seq,
                                    (unsigned long long)hdr[base].bytes);
                            emu_set_last_error("emu-nccl: send/recv mismatch with rank %d", p);
                            rc = ncclInvalidUsage;
                            goto out;
                        }
                    }
                    base++;
                }
            }
        }
    }
out:
    free(hdr);
    free(iov);
    free(x);
    return rc;
}

ncclResult_t emu_run_work(struct emu_work *w)
{
    struct emu_comm *c = w->comm;
    struct emu_op **coll = calloc((size_t)w->nops, sizeof(*coll));
    struct emu_op **p2p = calloc((size_t)w->nops, sizeof(*p2p));
    int ncoll = 0, np2p = 0;
    uint64_t seq0 = c->coll_seq;
    int64_t t0 = emu_now_ns();
    ncclResult_t rc;

    if (!coll || !p2p) {
        rc = ncclSystemError;
        goto out;
    }
    for (int i = 0; i < w->nops; i++) {
        if (w->ops[i].type == EMU_OP_SEND || w->ops[i].type == EMU_OP_RECV)
            p2p[np2p++] = &w->ops[i];
        else
            coll[ncoll++] = &w->ops[i];
    }
    rc = ncoll ? run_collectives(c, coll, ncoll) : ncclSuccess;
    if (rc == ncclSuccess && np2p)
        rc = run_p2p(c, p2p, np2p, ncoll > 0);
    if (emu_env()->debug) {
        double ms = (double)(emu_now_ns() - t0) / 1e6;
        for (int i = 0; i < w->nops; i++) {
            struct emu_op *op = &w->ops[i];
            char d[160];
            emu_describe_op(d, sizeof(d), op->type,
                            op->type == EMU_OP_SEND || op->type == EMU_OP_RECV ? 0 : seq0++,
                            op->count, op->dtype, op->redop, op->root);
            fprintf(stderr, "emu-nccl: comm 0x%llx rank %d/%d %s stream=%p group=%d %.3f ms%s\n",
                    (unsigned long long)c->hash, c->rank, c->nranks, d, (void *)op->stream, w->nops,
                    ms, rc == ncclSuccess ? "" : " FAILED");
        }
    }
out:
    free(coll);
    free(p2p);
    return rc;
}
