/* --consumer ipc's consumer process (consumer_ipc.h). The protocol on the socket: the rank sends
 * struct ipc_hello once, then per read a struct ipc_req; the peer answers a CUresult (int32) and,
 * when it is CUDA_SUCCESS, the bytes it read. */
#include "consumer_ipc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

struct ipc_hello {
    CUipcEventHandle ev;
    int32_t device;
};

struct ipc_req {
    CUipcMemHandle mem;
    uint64_t g;
    uint64_t bytes;
};

static int write_full(int fd, const void *buf, size_t n)
{
    const char *p = buf;

    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int read_full(int fd, void *buf, size_t n)
{
    char *p = buf;

    while (n) {
        ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

int emu_ipc_peer_start(struct emu_ipc_peer *p, CUevent ev, int device)
{
    struct ipc_hello h = {.device = device};
    int sv[2];
    char fd_s[16];
    char *argv[4];
    CUresult rc;

    p->pid = 0;
    p->fd = -1;
    if ((rc = cuIpcGetEventHandle(&h.ev, ev))) {
        fprintf(stderr, "prophet-emu: cuIpcGetEventHandle failed (%d)\n", (int)rc);
        return -1;
    }
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) {
        perror("prophet-emu: socketpair");
        return -1;
    }
    fcntl(sv[0], F_SETFD, FD_CLOEXEC);
    snprintf(fd_s, sizeof(fd_s), "%d", sv[1]);
    argv[0] = "prophet-emu";
    argv[1] = EMU_IPC_CHILD_ARG;
    argv[2] = fd_s;
    argv[3] = NULL;
    p->pid = fork();
    if (p->pid == 0) {
        /* none of the rank's descriptors (its communicator's sockets) stay open in the peer */
        for (int fd = 3; fd < 1024; fd++)
            if (fd != sv[1])
                close(fd);
        execv("/proc/self/exe", argv);
        _exit(127);
    }
    close(sv[1]);
    if (p->pid < 0) {
        perror("prophet-emu: fork (ipc consumer)");
        p->pid = 0;
        close(sv[0]);
        return -1;
    }
    p->fd = sv[0];
    if (write_full(p->fd, &h, sizeof(h))) {
        fprintf(stderr, "prophet-emu: ipc consumer: cannot send the event handle\n");
        return -1;
    }
    return 0;
}

int emu_ipc_peer_read(struct emu_ipc_peer *p, size_t g, const CUipcMemHandle *mem, size_t bytes,
                      void *out)
{
    struct ipc_req q = {.mem = *mem, .g = g, .bytes = bytes};
    int32_t st = -1;

    if (write_full(p->fd, &q, sizeof(q)) || read_full(p->fd, &st, sizeof(st))) {
        fprintf(stderr, "prophet-emu: ipc consumer: lost (gradient %zu)\n", g);
        return -1;
    }
    if (st) {
        fprintf(stderr, "prophet-emu: ipc consumer: gradient %zu: CUDA error %d\n", g, (int)st);
        return -1;
    }
    return read_full(p->fd, out, bytes);
}

void emu_ipc_peer_stop(struct emu_ipc_peer *p)
{
    if (p->fd >= 0)
        close(p->fd);
    p->fd = -1;
    if (p->pid > 0)
        waitpid(p->pid, NULL, 0);
    p->pid = 0;
}

/* ---- the consumer process ----------------------------------------------------------------- */

struct child {
    CUevent ev;
    CUstream s;
    CUdeviceptr *buf; /* per gradient: opened at its first read */
    size_t nbuf;
    void *host;
    size_t cap;
};

static CUresult child_setup(struct child *c, const struct ipc_hello *h)
{
    CUdevice d;
    CUcontext ctx;
    CUresult rc = cuInit(0);

    if (!rc)
        rc = cuDeviceGet(&d, h->device);
    if (!rc)
        rc = cuDevicePrimaryCtxRetain(&ctx, d);
    if (!rc)
        rc = cuCtxSetCurrent(ctx);
    if (!rc)
        rc = cuIpcOpenEventHandle(&c->ev, h->ev);
    if (!rc)
        rc = cuStreamCreate(&c->s, CU_STREAM_NON_BLOCKING);
    return rc;
}

/* Gradient q->g's buffer, opened once; its bytes, after the event's latest record, in c->host. */
static CUresult child_read(struct child *c, const struct ipc_req *q)
{
    CUresult rc;

    if (q->g >= c->nbuf) {
        size_t n = q->g + 1;
        CUdeviceptr *b = realloc(c->buf, n * sizeof(*b));
        if (!b)
            return CUDA_ERROR_OUT_OF_MEMORY;
        memset(b + c->nbuf, 0, (n - c->nbuf) * sizeof(*b));
        c->buf = b;
        c->nbuf = n;
    }
    if (q->bytes > c->cap) {
        void *h = realloc(c->host, q->bytes);
        if (!h)
            return CUDA_ERROR_OUT_OF_MEMORY;
        c->host = h;
        c->cap = q->bytes;
    }
    if (!c->buf[q->g] &&
        (rc = cuIpcOpenMemHandle(&c->buf[q->g], q->mem, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)))
        return rc;
    if ((rc = cuStreamWaitEvent(c->s, c->ev, 0)) ||
        (rc = cuMemcpyDtoHAsync(c->host, c->buf[q->g], q->bytes, c->s)))
        return rc;
    return cuStreamSynchronize(c->s);
}

int emu_ipc_child_main(const char *fd_arg)
{
    struct child c = {0};
    struct ipc_hello h;
    struct ipc_req q;
    int fd = atoi(fd_arg);
    CUresult rc;

    if (read_full(fd, &h, sizeof(h)))
        return 1;
    rc = child_setup(&c, &h);
    while (read_full(fd, &q, sizeof(q)) == 0) {
        int32_t st = rc ? (int32_t)rc : (int32_t)child_read(&c, &q);
        if (write_full(fd, &st, sizeof(st)) || (!st && write_full(fd, c.host, q.bytes)))
            break;
    }
    for (size_t g = 0; g < c.nbuf; g++)
        if (c.buf[g])
            cuIpcCloseMemHandle(c.buf[g]);
    free(c.buf);
    free(c.host);
    return 0;
}
