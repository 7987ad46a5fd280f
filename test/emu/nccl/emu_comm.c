/* Communicators of the emulated NCCL: bootstrap root, rank rendezvous, socket mesh, split,
 * teardown.
 *
 * ncclGetUniqueId starts a root thread listening on a TCP port; its address is in the id. Each rank
 * opens its own listener, sends (nranks, rank, listener address) to the root and receives every
 * rank's address. Then every rank connects one data socket to every other rank (out_fd[p]; the
 * peer keeps it as in_fd[r]) and one bootstrap socket to the next rank of the ring (used by
 * host-side exchanges such as ncclCommSplit, so they never mix with stream work). */
#include "emu_nccl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

enum { EMU_LINK_DATA = 1, EMU_LINK_BOOT = 2 };

struct emu_root_hello {
    uint64_t magic;
    uint64_t hash;
    int32_t nranks;
    int32_t rank;
    struct sockaddr_in addr;
};

struct emu_link_hello {
    uint64_t magic;
    uint64_t hash;
    int32_t from;
    int32_t kind;
};

struct emu_root {
    int lfd;
    struct emu_id id;
    pthread_mutex_t mu; /* started: the thread is up (ncclGetUniqueId waits for it, so that a */
    pthread_cond_t cv;  /* fork right after it never copies a half-started thread's locks) */
    int started;
};

/* Accepts ranks until all nranks have said hello, then sends each the address table. */
static void *root_main(void *arg)
{
    struct emu_root *root = arg;
    struct sockaddr_in *addrs = NULL;
    int *fds = NULL, nranks = -1, joined = 0;

    pthread_mutex_lock(&root->mu);
    root->started = 1;
    pthread_cond_broadcast(&root->cv);
    pthread_mutex_unlock(&root->mu);
    for (;;) {
        struct emu_root_hello h;
        int fd = emu_accept(root->lfd, -1);

        if (fd < 0)
            continue;
        if (emu_recv_all(fd, &h, sizeof(h), 10000) < 0 || h.magic != EMU_ID_MAGIC ||
            h.hash != root->id.hash || h.nranks <= 0 || h.rank < 0 || h.rank >= h.nranks ||
            (nranks > 0 && h.nranks != nranks) || (fds && fds[h.rank] >= 0)) {
            fprintf(stderr, "emu-nccl: bootstrap root: rejected a bad or duplicate rank hello\n");
            close(fd);
            continue;
        }
        if (nranks < 0) {
            nranks = h.nranks;
            addrs = calloc((size_t)nranks, sizeof(*addrs));
            fds = malloc((size_t)nranks * sizeof(*fds));
            if (!addrs || !fds)
                goto out;
            for (int i = 0; i < nranks; i++)
                fds[i] = -1;
        }
        fds[h.rank] = fd;
        addrs[h.rank] = h.addr;
        if (++joined == nranks)
            break;
    }
    for (int i = 0; i < nranks; i++) {
        emu_send_all(fds[i], addrs, (size_t)nranks * sizeof(*addrs), 10000);
        close(fds[i]);
    }
out:
    close(root->lfd);
    free(addrs);
    free(fds);
    pthread_mutex_lock(&root->mu); /* ncclGetUniqueId is done with it */
    pthread_mutex_unlock(&root->mu);
    pthread_mutex_destroy(&root->mu);
    pthread_cond_destroy(&root->cv);
    free(root);
    return NULL;
}

ncclResult_t emu_rendezvous_root_start(struct emu_id *id)
{
    const struct emu_env *env = emu_env();
    struct emu_root *root = calloc(1, sizeof(*root));
    struct sockaddr_in bound;
    struct in_addr bind_addr = env->addr;
    pthread_t th;
    uint64_t rnd = 0;
    FILE *f;

    if (!root)
        return ncclSystemError;
    if (env->have_root_addr) /* reached from other namespaces through that address */
        bind_addr.s_addr = htonl(INADDR_ANY);
    root->lfd = emu_listen(bind_addr, &bound);
    if (root->lfd < 0) {
        emu_set_last_error("emu-nccl: cannot listen for the bootstrap root: %s", strerror(errno));
        free(root);
        return ncclSystemError;
    }
    f = fopen("/dev/urandom", "rb");
    if (!f || fread(&rnd, sizeof(rnd), 1, f) != 1)
        rnd = (uint64_t)emu_now_ns() ^ ((uint64_t)getpid() << 32);
    if (f)
        fclose(f);
    memset(id, 0, sizeof(*id));
    id->magic = EMU_ID_MAGIC;
    id->hash = rnd;
    id->root = bound;
    if (env->have_root_addr)
        id->root.sin_addr = env->root_addr;
    root->id = *id;
    pthread_mutex_init(&root->mu, NULL);
    pthread_cond_init(&root->cv, NULL);
    pthread_mutex_lock(&root->mu);
    if (pthread_create(&th, NULL, root_main, root) != 0) {
        pthread_mutex_unlock(&root->mu);
        close(root->lfd);
        free(root);
        return ncclSystemError;
    }
    pthread_detach(th);
    while (!root->started)
        pthread_cond_wait(&root->cv, &root->mu);
    pthread_mutex_unlock(&root->mu);
    return ncclSuccess;
}

static struct emu_comm *comm_alloc(int nranks, int rank, uint64_t hash, int blocking, int device)
{
    struct emu_comm *c = calloc(1, sizeof(*c));

    if (!c)
        return NULL;
    c->hash = hash;
    c->rank = rank;
    c->nranks = nranks;
    c->device = device;
    c->blocking = blocking;
    c->listen_fd = -1;
    c->bs_next_fd = c->bs_prev_fd = -1;
    c->addrs = calloc((size_t)nranks, sizeof(*c->addrs));
    c->out_fd = malloc((size_t)nranks * sizeof(int));
    c->in_fd = malloc((size_t)nranks * sizeof(int));
    c->p2p_send_seq = calloc((size_t)nranks, sizeof(uint64_t));
    c->p2p_recv_seq = calloc((size_t)nranks, sizeof(uint64_t));
    c->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (!c->addrs || !c->out_fd || !c->in_fd || !c->p2p_send_seq || !c->p2p_recv_seq ||
        c->wake_fd < 0) {
        free(c->addrs);
        free(c->out_fd);
        free(c->in_fd);
        free(c->p2p_send_seq);
        free(c->p2p_recv_seq);
        if (c->wake_fd >= 0)
            close(c->wake_fd);
        free(c);
        return NULL;
    }
    for (int i = 0; i < nranks; i++)
        c->out_fd[i] = c->in_fd[i] = -1;
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    c->refs = 1;
    c->state = EMU_COMM_INIT;
    atomic_init(&c->aborted, 0);
    atomic_init(&c->async_err, ncclSuccess);
    return c;
}

static void comm_set_state(struct emu_comm *c, int state)
{
    pthread_mutex_lock(&c->mu);
    c->state = state;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

ncclResult_t emu_wait_ready(struct emu_comm *c)
{
    int state;

    pthread_mutex_lock(&c->mu);
    while (c->state == EMU_COMM_INIT)
        pthread_cond_wait(&c->cv, &c->mu);
    state = c->state;
    pthread_mutex_unlock(&c->mu);
    if (state == EMU_COMM_READY)
        return ncclSuccess;
    return (ncclResult_t)atomic_load(&c->async_err);
}

ncclResult_t emu_comm_connect(struct emu_comm *c)
{
    const struct emu_env *env = emu_env();
    int n = c->nranks, r = c->rank, expect = n > 1 ? n : 0;

    for (int p = 0; p < n; p++) {
        struct emu_link_hello h = {EMU_ID_MAGIC, c->hash, r, EMU_LINK_DATA};
        if (p == r)
            continue;
        c->out_fd[p] = emu_connect(&c->addrs[p], env->timeout_ms);
        if (c->out_fd[p] < 0 || emu_send_all(c->out_fd[p], &h, sizeof(h), env->timeout_ms) < 0)
            goto fail;
    }
    if (n > 1) {
        struct emu_link_hello h = {EMU_ID_MAGIC, c->hash, r, EMU_LINK_BOOT};
        c->bs_next_fd = emu_connect(&c->addrs[(r + 1) % n], env->timeout_ms);
        if (c->bs_next_fd < 0 || emu_send_all(c->bs_next_fd, &h, sizeof(h), env->timeout_ms) < 0)
            goto fail;
    }
    while (expect > 0) {
        struct emu_link_hello h;
        int fd = emu_accept(c->listen_fd, env->timeout_ms);

        if (fd < 0)
            goto fail;
        if (emu_recv_all(fd, &h, sizeof(h), env->timeout_ms) < 0 || h.magic != EMU_ID_MAGIC ||
            h.hash != c->hash || h.from < 0 || h.from >= n || h.from == r) {
            close(fd);
            continue;
        }
        if (h.kind == EMU_LINK_DATA && c->in_fd[h.from] < 0) {
            c->in_fd[h.from] = fd;
        } else if (h.kind == EMU_LINK_BOOT && c->bs_prev_fd < 0 && h.from == (r + n - 1) % n) {
            c->bs_prev_fd = fd;
        } else {
            close(fd);
            continue;
        }
        expect--;
    }
    close(c->listen_fd);
    c->listen_fd = -1;
    return ncclSuccess;
fail:
    fprintf(stderr, "emu-nccl: comm 0x%llx rank %d: cannot connect the ring: %s\n",
            (unsigned long long)c->hash, r, strerror(errno));
    emu_set_last_error("emu-nccl: rank %d cannot connect to its peers", r);
    return ncclSystemError;
}

/* Sends this rank's listener address to the root and receives everyone's. */
static ncclResult_t rendezvous(struct emu_comm *c, const struct emu_id *id)
{
    const struct emu_env *env = emu_env();
    struct emu_root_hello h = {EMU_ID_MAGIC, id->hash, c->nranks, c->rank, c->addrs[c->rank]};
    int fd = emu_connect(&id->root, env->timeout_ms);
    ncclResult_t rc = ncclSuccess;

    if (fd < 0 || emu_send_all(fd, &h, sizeof(h), env->timeout_ms) < 0 ||
        emu_recv_all(fd, c->addrs, (size_t)c->nranks * sizeof(*c->addrs), env->timeout_ms) < 0) {
        char ip[INET_ADDRSTRLEN] = "?";
        inet_ntop(AF_INET, &id->root.sin_addr, ip, sizeof(ip));
        fprintf(stderr, "emu-nccl: rank %d: bootstrap with root %s:%d failed: %s\n", c->rank, ip,
                ntohs(id->root.sin_port), strerror(errno));
        emu_set_last_error("emu-nccl: bootstrap with the root failed");
        rc = ncclSystemError;
    }
    if (fd >= 0)
        close(fd);
    return rc;
}

/* Rendezvous + connect; sets the state. */
static ncclResult_t comm_init_body(struct emu_comm *c)
{
    ncclResult_t rc = rendezvous(c, &c->id);

    if (rc == ncclSuccess)
        rc = emu_comm_connect(c);
    if (rc != ncclSuccess) {
        atomic_store(&c->async_err, rc);
        comm_set_state(c, EMU_COMM_FAILED);
        return rc;
    }
    comm_set_state(c, EMU_COMM_READY);
    return ncclSuccess;
}

static void *init_thread(void *arg)
{
    struct emu_comm *c = arg;
    comm_init_body(c);
    emu_comm_put(c);
    return NULL;
}

ncclResult_t emu_comm_create(struct emu_comm **out, int nranks, int rank, const struct emu_id *id,
                             int blocking, int device)
{
    struct emu_comm *c = comm_alloc(nranks, rank, id->hash, blocking, device);
    pthread_t th;
    ncclResult_t rc;

    if (!c)
        return ncclSystemError;
    c->id = *id;
    c->listen_fd = emu_listen(emu_env()->addr, &c->addrs[rank]);
    if (c->listen_fd < 0) {
        emu_set_last_error("emu-nccl: cannot open a listening socket: %s", strerror(errno));
        emu_comm_put(c);
        return ncclSystemError;
    }
    if (!blocking) {
        c->refs++; /* held by the init thread */
        if (pthread_create(&th, NULL, init_thread, c) != 0) {
            c->refs--;
            emu_comm_put(c);
            return ncclSystemError;
        }
        pthread_detach(th);
        *out = c;
        return ncclInProgress;
    }
    rc = comm_init_body(c);
    if (rc != ncclSuccess) {
        emu_comm_put(c);
        return rc;
    }
    *out = c;
    return ncclSuccess;
}

/* Ring all-gather of `size`-byte items over the bootstrap sockets (host side). */
static int boot_allgather(struct emu_comm *c, void *items, size_t size)
{
    int64_t to = emu_env()->timeout_ms;
    int n = c->nranks, r = c->rank;

    for (int t = 0; t < n - 1; t++) {
        int s = ((r - t) % n + n) % n, q = ((r - t - 1) % n + n) % n;
        if (emu_send_all(c->bs_next_fd, (char *)items + (size_t)s * size, size, to) < 0 ||
            emu_recv_all(c->bs_prev_fd, (char *)items + (size_t)q * size, size, to) < 0)
            return -1;
    }
    return 0;
}

struct emu_split_item {
    int32_t color;
    int32_t key;
    int32_t rank;
    int32_t pad;
    struct sockaddr_in addr;
};

ncclResult_t emu_comm_split(struct emu_comm *parent, int color, int key, struct emu_comm **out,
                            int blocking)
{
    int n = parent->nranks, newn = 0, newr = -1, lfd = -1;
    struct emu_split_item *items = calloc((size_t)n, sizeof(*items));
    struct emu_split_item *mine;
    struct emu_comm *c = NULL;
    ncclResult_t rc = ncclSystemError;
    uint64_t hash;

    (void)blocking;
    *out = NULL;
    if (!items)
        return ncclSystemError;
    mine = &items[parent->rank];
    mine->color = color;
    mine->key = key;
    mine->rank = parent->rank;
    if (color != NCCL_SPLIT_NOCOLOR) {
        lfd = emu_listen(emu_env()->addr, &mine->addr);
        if (lfd < 0)
            goto out; /* peers then time out in the exchange */
    }
    if (boot_allgather(parent, items, sizeof(*items)) < 0) {
        fprintf(stderr, "emu-nccl: comm 0x%llx rank %d: ncclCommSplit exchange failed\n",
                (unsigned long long)parent->hash, parent->rank);
        rc = ncclRemoteError;
        goto out;
    }
    hash = parent->hash * 0x9e3779b97f4a7c15ull + ++parent->split_count * 1000003ull +
           (uint64_t)(uint32_t)color;
    if (color == NCCL_SPLIT_NOCOLOR) {
        rc = ncclSuccess;
        goto out;
    }
    /* new rank = position among same-colour ranks ordered by (key, parent rank) */
    for (int i = 0; i < n; i++) {
        if (items[i].color != color)
            continue;
        newn++;
        if (items[i].key < key || (items[i].key == key && i < parent->rank))
            newr++;
    }
    newr++;
    c = comm_alloc(newn, newr, hash, 1, parent->device);
    if (!c)
        goto out;
    for (int i = 0; i < n; i++) {
        int pos = 0;
        if (items[i].color != color)
            continue;
        for (int k = 0; k < n; k++) {
            if (items[k].color == color &&
                (items[k].key < items[i].key || (items[k].key == items[i].key && k < i)))
                pos++;
        }
        c->addrs[pos] = items[i].addr;
    }
    c->listen_fd = lfd;
    lfd = -1;
    rc = emu_comm_connect(c);
    if (rc != ncclSuccess)
        goto out;
    comm_set_state(c, EMU_COMM_READY);
    *out = c;
    c = NULL;
out:
    if (lfd >= 0)
        close(lfd);
    if (c)
        emu_comm_put(c);
    free(items);
    return rc;
}

static void shut(int fd)
{
    if (fd >= 0)
        shutdown(fd, SHUT_RDWR);
}

void emu_comm_fail(struct emu_comm *c, ncclResult_t err)
{
    int expected = ncclSuccess;

    atomic_compare_exchange_strong(&c->async_err, &expected, (int)err);
    for (int p = 0; p < c->nranks; p++) {
        shut(c->out_fd[p]);
        shut(c->in_fd[p]);
    }
    shut(c->bs_next_fd);
    shut(c->bs_prev_fd);
}

static void closefd(int fd)
{
    if (fd >= 0)
        close(fd);
}

void emu_comm_put(struct emu_comm *c)
{
    int last;
    struct emu_work *w;

    pthread_mutex_lock(&c->mu);
    last = --c->refs == 0;
    pthread_mutex_unlock(&c->mu);
    if (!last)
        return;
    for (int p = 0; p < c->nranks; p++) {
        closefd(c->out_fd[p]);
        closefd(c->in_fd[p]);
    }
    closefd(c->bs_next_fd);
    closefd(c->bs_prev_fd);
    closefd(c->listen_fd);
    closefd(c->wake_fd);
    while ((w = c->captured)) {
        c->captured = w->next;
        free(w->ops);
        free(w);
    }
    free(c->addrs);
    free(c->out_fd);
    free(c->in_fd);
    free(c->p2p_send_seq);
    free(c->p2p_recv_seq);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    free(c);
}
