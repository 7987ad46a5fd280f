/* Internal state of the emulated NCCL (libnccl.so.2 test double). */
#ifndef EMU_NCCL_H
#define EMU_NCCL_H

#include <cuda.h>
#include <nccl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>

#define EMU_API __attribute__((visibility("default")))

/* First statement of an entry point that EMU_FAULT can make fail. The faults are counted by the
 * emulated driver (emuFaultHit, test/emu/cuda/emu_fault.c), found with dlsym: NCCL is not linked to
 * libcuda (emu_cudrv.c). */
int emu_nccl_fault_hit(const char *name, int *code);
#define EMU_NCCL_FAULT_POINT(name)                                                                 \
    do {                                                                                           \
        int emu_fault_code_ = ncclInternalError;                                                   \
        if (emu_nccl_fault_hit(name, &emu_fault_code_))                                            \
            return (ncclResult_t)emu_fault_code_;                                                  \
    } while (0)
/* The communicator is nccl.h's opaque struct ncclComm. */
#define emu_comm ncclComm
#define EMU_ID_MAGIC 0x454d554e43434c31ull /* "EMUNCCL1" */

/* Kinds of operations. */
enum emu_op_type {
    EMU_OP_ALLREDUCE,
    EMU_OP_BROADCAST,
    EMU_OP_REDUCE,
    EMU_OP_ALLGATHER,
    EMU_OP_REDUCESCATTER,
    EMU_OP_SEND,
    EMU_OP_RECV,
};

/* One enqueued operation (count is per rank as in the NCCL call). */
struct emu_op {
    int type;
    const void *sendbuff;
    void *recvbuff;
    size_t count;
    int dtype;
    int redop;
    int root; /* broadcast/reduce root, or send/recv peer */
    /* a PreMulSum op (redop >= ncclNumOps), resolved at enqueue: the op may be destroyed
     * before the work runs, as NCCL allows */
    int premul;
    double premul_scalar;          /* host-immediate scalar */
    const void *premul_device_ptr; /* device-resident scalar (read when the work runs), or NULL */
    CUstream stream;
    struct emu_comm *comm;
};

/* Contents of an ncclUniqueId. */
struct emu_id {
    uint64_t magic;
    uint64_t hash; /* identifies the communicator in messages */
    struct sockaddr_in root;
};

/* Token bucket shared by all communicators of one device (one "NIC" per GPU). */
struct emu_bucket {
    pthread_mutex_t mu;
    double tokens;
    int64_t last_ns;
    int waiting; /* a sender is waiting for tokens (backlogged link) */
};

/* ncclRedOpCreatePreMulSum: custom operation ncclNumOps + i of a communicator is premul[i]. */
#define EMU_MAX_PREMUL 32
struct emu_premul {
    int used;
    int dtype;
    int device;         /* ncclScalarDevice: read *scalar when the operation runs */
    double host_scalar; /* ncclScalarHostImmediate: read at creation */
    const void *scalar;
};
/* The pre-multiplier of a custom op of c, or NULL when op is not one of c's (emu_api.c). */
const struct emu_premul *emu_premul_of(struct emu_comm *c, int op);

enum emu_comm_state { EMU_COMM_INIT, EMU_COMM_READY, EMU_COMM_FAILED };

struct emu_comm {
    uint64_t hash;
    int rank, nranks, device;
    int blocking;
    int listen_fd;
    struct sockaddr_in *addrs;  /* every rank's listening address */
    int *out_fd, *in_fd;        /* data sockets: out_fd[p] sends to p, in_fd[p] receives from p */
    int bs_next_fd, bs_prev_fd; /* bootstrap ring for host-side exchanges (split) */
    int wake_fd;                /* eventfd written by abort to wake blocked transfers */

    pthread_mutex_t mu;
    pthread_cond_t cv;
    int state;            /* enum emu_comm_state */
    int refs;             /* the user's handle + each pending stream work + an init thread */
    int pending;          /* stream work enqueued and not yet finished */
    uint64_t next_ticket; /* run order of stream work = enqueue order */
    uint64_t now_serving;
    atomic_int aborted;
    atomic_int async_err; /* ncclResult_t */
    uint64_t coll_seq;    /* collective sequence number (all ranks agree) */
    uint64_t *p2p_send_seq, *p2p_recv_seq;
    uint64_t split_count;
    atomic_ullong allreduce_calls; /* ncclAllReduce calls that reached the library (test hook) */
    atomic_ullong broadcast_calls; /* ncclBroadcast and ncclBcast calls, the same way */
    struct emu_premul premul[EMU_MAX_PREMUL]; /* under mu */
    struct emu_work *captured;                /* work recorded into graphs, freed at destroy */
    /* stream work launched and not yet run, under mu: the comm holds it until its host function
     * frees it; a context that traps first never runs it (emu_cuda drops the ops of a stopped
     * context), and it stays reachable here rather than lost (LeakSanitizer) */
    struct emu_work *launched;

    /* used by the non-blocking init thread */
    struct emu_id id;
};

/* A fused group of operations of one communicator, run by one host function. */
struct emu_work {
    struct emu_comm *comm;
    struct emu_op *ops;
    int nops;
    int captured;
    uint64_t ticket;
    struct emu_work *next;                          /* in comm->captured */
    struct emu_work *launched_prev, *launched_next; /* in comm->launched */
};

/* emu_env.c */
struct emu_env {
    double bw;          /* bytes/s per outgoing link, 0 = unpaced */
    double bw_after;    /* EMU_NCCL_BW_CHANGE: the link's speed from change_ms on (0 = unpaced) */
    int64_t change_ms;  /* ms after the first paced transfer; -1 = no change */
    int64_t latency_us; /* once per fused pass */
    int64_t timeout_ms;
    int debug;
    struct in_addr addr; /* local interface to bind */
    int have_addr;
    struct in_addr root_addr; /* address written into unique ids */
    int have_root_addr;
};
const struct emu_env *emu_env(void);
/* The paced bandwidth in force now (EMU_NCCL_BW, then EMU_NCCL_BW_CHANGE's after its time). */
double emu_link_bw(void);
/* emuNcclSetLinkBandwidth: overrides the environment's pacing from now on (0: unpaced). */
void emu_link_bw_set(double Bps);
/* The latency of a pass: emuNcclSetLatency's, else EMU_NCCL_LATENCY_US. */
void emu_latency_set(int64_t us);
int64_t emu_latency_us(void);
int64_t emu_now_ns(void);
/* Parse "1Gbit", "10Gbit", "125MB", "1e9" into bytes/s; <0 when invalid. */
double emu_parse_bw(const char *s);

/* emu_net.c */
int emu_listen(struct in_addr addr, struct sockaddr_in *bound);
int emu_connect(const struct sockaddr_in *to, int64_t timeout_ms);
int emu_send_all(int fd, const void *buf, size_t len, int64_t timeout_ms);
int emu_recv_all(int fd, void *buf, size_t len, int64_t timeout_ms);
int emu_accept(int lfd, int64_t timeout_ms);

/* One direction of a transfer over a socket, progressed by emu_xfer_run. */
struct emu_xfer {
    int fd;
    int is_send;
    int peer;
    struct iovec *iov;
    int iovcnt;
    int cur;     /* current iov */
    size_t off;  /* offset in iov[cur] */
    size_t left; /* bytes still to move */
    /* optional, receives only: called after progress with the bytes received so far */
    void (*progress)(void *arg, size_t received);
    void *progress_arg;
};
/* Moves every transfer to completion with poll(); pacing on sends. Returns ncclSuccess,
 * ncclRemoteError (peer closed), ncclSystemError (timeout, socket error) or
 * ncclInvalidUsage (communicator aborted); *bad_peer names the peer that failed. */
ncclResult_t emu_xfer_run(struct emu_comm *comm, struct emu_xfer *x, int n, int *bad_peer);

/* emu_comm.c */
ncclResult_t emu_comm_create(struct emu_comm **out, int nranks, int rank, const struct emu_id *id,
                             int blocking, int device);
ncclResult_t emu_comm_connect(struct emu_comm *comm); /* after addrs are known */
ncclResult_t emu_comm_split(struct emu_comm *parent, int color, int key, struct emu_comm **out,
                            int blocking);
void emu_comm_fail(struct emu_comm *comm, ncclResult_t err);
void emu_comm_put(struct emu_comm *comm);
ncclResult_t emu_rendezvous_root_start(struct emu_id *id);
ncclResult_t emu_wait_ready(struct emu_comm *comm);

/* emu_ring.c */
ncclResult_t emu_run_work(struct emu_work *w);
void emu_describe_op(char *buf, size_t len, int type, uint64_t seq, size_t count, int dtype,
                     int redop, int root);

/* emu_api.c */
void emu_set_last_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
