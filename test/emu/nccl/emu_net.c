/* TCP sockets of the emulated NCCL: listen/connect helpers and the paced transfer engine.
 *
 * Pacing: one token bucket per CUDA device (one "NIC" per GPU), filled at EMU_NCCL_BW bytes/s with
 * a burst of max(256 KiB, 2 ms of traffic). A send moves at most the tokens it holds. */
#include "emu_nccl.h"

#include <errno.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define EMU_MAX_DEVICES 64
#define EMU_MIN_GRANT (64 * 1024)
#define EMU_RECV_SLICE (256 * 1024) /* receive in slices so reductions overlap the transfer */

static struct emu_bucket buckets[EMU_MAX_DEVICES];
static pthread_once_t buckets_once = PTHREAD_ONCE_INIT;

static void buckets_init(void)
{
    for (int i = 0; i < EMU_MAX_DEVICES; i++) {
        pthread_mutex_init(&buckets[i].mu, NULL);
        buckets[i].tokens = 0;
        buckets[i].last_ns = emu_now_ns();
    }
}

static double bucket_burst(double bw)
{
    double b = bw * 0.002;
    return b < 256 * 1024 ? 256 * 1024 : b;
}

/* Takes up to `want` bytes of tokens from the device's bucket. Returns the bytes granted (0 when
 * the caller must wait *wait_ns first). After a wait for tokens the bucket may hold up to 20 ms of
 * traffic, so a sender that woke up late (loaded CPU) catches up; an idle link keeps only the
 * small burst, so short messages are not sped up. */
static size_t bucket_take(int device, size_t want, int64_t *wait_ns)
{
    double bw = emu_link_bw(), cap, need;
    struct emu_bucket *b;
    int64_t now;
    size_t grant = 0;

    if (bw <= 0)
        return want;
    pthread_once(&buckets_once, buckets_init);
    b = &buckets[(unsigned)device % EMU_MAX_DEVICES];
    pthread_mutex_lock(&b->mu);
    now = emu_now_ns();
    cap = b->waiting ? bw * 0.020 : bucket_burst(bw);
    if (cap < bucket_burst(bw))
        cap = bucket_burst(bw);
    b->tokens += (double)(now - b->last_ns) * 1e-9 * bw;
    if (b->tokens > cap)
        b->tokens = cap;
    b->last_ns = now;
    need = want < EMU_MIN_GRANT ? (double)want : EMU_MIN_GRANT;
    if (b->tokens >= need) {
        grant = b->tokens < (double)want ? (size_t)b->tokens : want;
        b->tokens -= (double)grant;
        b->waiting = grant < want;
    } else {
        *wait_ns = (int64_t)((need - b->tokens) / bw * 1e9) + 1;
        b->waiting = 1;
    }
    pthread_mutex_unlock(&b->mu);
    return grant;
}

static void bucket_give_back(int device, size_t bytes)
{
    struct emu_bucket *b;

    if (emu_link_bw() <= 0 || bytes == 0)
        return;
    b = &buckets[(unsigned)device % EMU_MAX_DEVICES];
    pthread_mutex_lock(&b->mu);
    b->tokens += (double)bytes;
    pthread_mutex_unlock(&b->mu);
}

static void sock_tune(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int emu_listen(struct in_addr addr, struct sockaddr_in *bound)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr = addr, .sin_port = 0};
    socklen_t len = sizeof(*bound);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0)
        return -1;
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 1024) < 0 ||
        getsockname(fd, (struct sockaddr *)bound, &len) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static int wait_fd(int fd, short events, int64_t timeout_ms)
{
    struct pollfd p = {.fd = fd, .events = events};
    int rc;

    do {
        rc = poll(&p, 1, (int)timeout_ms);
    } while (rc < 0 && errno == EINTR);
    return rc > 0 ? 0 : -1;
}

int emu_connect(const struct sockaddr_in *to, int64_t timeout_ms)
{
    int64_t deadline = emu_now_ns() + timeout_ms * 1000000;

    /* The peer may not listen yet (non-blocking init): retry until the deadline. */
    for (;;) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            return -1;
        if (connect(fd, (const struct sockaddr *)to, sizeof(*to)) == 0) {
            sock_tune(fd);
            return fd;
        }
        close(fd);
        if ((errno != ECONNREFUSED && errno != EINTR && errno != ETIMEDOUT) ||
            emu_now_ns() > deadline)
            return -1;
        usleep(10000);
    }
}

int emu_accept(int lfd, int64_t timeout_ms)
{
    int fd;

    if (wait_fd(lfd, POLLIN, timeout_ms) < 0)
        return -1;
    do {
        fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    if (fd >= 0)
        sock_tune(fd);
    return fd;
}

/* Sends (events == POLLOUT) or receives all len bytes at p, waiting up to timeout_ms whenever the
 * socket is not ready. p is only written when receiving. */
static int sock_all(int fd, char *p, size_t len, short events, int64_t timeout_ms)
{
    while (len) {
        ssize_t n = events == POLLOUT ? send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT)
                                      : recv(fd, p, len, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            if (wait_fd(fd, events, timeout_ms) < 0)
                return -1;
            continue;
        }
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int emu_send_all(int fd, const void *buf, size_t len, int64_t timeout_ms)
{
    return sock_all(fd, (char *)buf, len, POLLOUT, timeout_ms);
}

int emu_recv_all(int fd, void *buf, size_t len, int64_t timeout_ms)
{
    return sock_all(fd, buf, len, POLLIN, timeout_ms);
}

/* Advances x by n bytes. */
static void xfer_advance(struct emu_xfer *x, size_t n)
{
    x->left -= n;
    while (n) {
        size_t room = x->iov[x->cur].iov_len - x->off;
        if (n < room) {
            x->off += n;
            return;
        }
        n -= room;
        x->cur++;
        x->off = 0;
    }
    while (x->cur < x->iovcnt && x->iov[x->cur].iov_len == 0)
        x->cur++;
}

/* One non-blocking sendmsg/recvmsg of at most `limit` bytes. Returns bytes moved, 0 when the
 * socket would block, -1 on error, -2 when the peer closed. */
static ssize_t xfer_step(struct emu_xfer *x, size_t limit)
{
    struct iovec iov[64];
    struct msghdr msg = {0};
    size_t total = 0;
    int cnt = 0;
    ssize_t n;

    for (int i = x->cur; i < x->iovcnt && cnt < 64 && total < limit; i++) {
        size_t off = i == x->cur ? x->off : 0;
        size_t len = x->iov[i].iov_len - off;
        if (len == 0)
            continue;
        if (len > limit - total)
            len = limit - total;
        iov[cnt].iov_base = (char *)x->iov[i].iov_base + off;
        iov[cnt].iov_len = len;
        total += len;
        cnt++;
    }
    msg.msg_iov = iov;
    msg.msg_iovlen = (size_t)cnt;
    if (x->is_send)
        n = sendmsg(x->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    else
        n = recvmsg(x->fd, &msg, MSG_DONTWAIT);
    if (n < 0)
        return (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) ? 0 : -1;
    if (n == 0 && !x->is_send)
        return -2;
    xfer_advance(x, (size_t)n);
    return n;
}

ncclResult_t emu_xfer_run(struct emu_comm *comm, struct emu_xfer *x, int n, int *bad_peer)
{
    const struct emu_env *env = emu_env();
    struct pollfd pfd[n + 1];
    int map[n + 1];
    int64_t last_progress = emu_now_ns();

    size_t total[n > 0 ? n : 1];

    for (int i = 0; i < n; i++) {
        x[i].cur = 0;
        x[i].off = 0;
        x[i].left = 0;
        for (int k = 0; k < x[i].iovcnt; k++)
            x[i].left += x[i].iov[k].iov_len;
        while (x[i].cur < x[i].iovcnt && x[i].iov[x[i].cur].iov_len == 0)
            x[i].cur++;
        total[i] = x[i].left;
    }
    for (;;) {
        int np = 0, busy = 0, rc;
        int64_t wait_ns = INT64_MAX, now;

        if (atomic_load(&comm->aborted))
            return ncclInvalidUsage;
        /* Move what can move without blocking, then poll for the rest. */
        for (int i = 0; i < n; i++) {
            size_t limit = x[i].left;
            int64_t w = 0;
            ssize_t moved;

            if (!x[i].left)
                continue;
            if (x[i].is_send) {
                limit = bucket_take(comm->device, x[i].left, &w);
                if (limit == 0) {
                    if (w < wait_ns)
                        wait_ns = w;
                    continue;
                }
            } else if (x[i].progress && limit > EMU_RECV_SLICE) {
                limit = EMU_RECV_SLICE;
            }
            moved = xfer_step(&x[i], limit);
            if (x[i].is_send && moved >= 0)
                bucket_give_back(comm->device, limit - (size_t)moved);
            if (moved == -2) {
                *bad_peer = x[i].peer;
                return ncclRemoteError;
            }
            if (moved < 0) {
                *bad_peer = x[i].peer;
                return x[i].is_send ? ncclRemoteError : ncclSystemError;
            }
            if (moved > 0) {
                last_progress = emu_now_ns();
                if (x[i].progress)
                    x[i].progress(x[i].progress_arg, total[i] - x[i].left);
                if (x[i].left) {
                    wait_ns = 0; /* try again at once */
                }
                continue;
            }
            pfd[np].fd = x[i].fd;
            pfd[np].events = x[i].is_send ? POLLOUT : POLLIN;
            map[np++] = i;
        }
        for (int i = 0; i < n; i++)
            busy |= x[i].left > 0;
        if (!busy)
            return ncclSuccess;
        if (wait_ns == 0)
            continue;
        now = emu_now_ns();
        if (now - last_progress > env->timeout_ms * 1000000) {
            for (int i = 0; i < n; i++) {
                if (x[i].left) {
                    *bad_peer = x[i].peer;
                    break;
                }
            }
            return ncclSystemError;
        }
        pfd[np].fd = comm->wake_fd;
        pfd[np].events = POLLIN;
        map[np++] = -1;
        {
            int64_t to_ms = env->timeout_ms - (now - last_progress) / 1000000;
            if (wait_ns != INT64_MAX && wait_ns / 1000000 < to_ms)
                to_ms = wait_ns / 1000000;
            if (to_ms < 0)
                to_ms = 0;
            if (wait_ns != INT64_MAX && wait_ns < 1000000) {
                /* sub-millisecond pacing wait: sleep instead of spinning in poll(0) */
                struct timespec ts = {0, (long)wait_ns};
                if (np == 1) {
                    nanosleep(&ts, NULL);
                    continue;
                }
                to_ms = 1;
            }
            rc = poll(pfd, (nfds_t)np, (int)to_ms);
        }
        if (rc < 0 && errno != EINTR) {
            *bad_peer = -1;
            return ncclSystemError;
        }
        (void)map;
    }
}
