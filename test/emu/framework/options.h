/* prophet-emu command line: the options, their defaults and their validation. */
#ifndef EMU_OPTIONS_H
#define EMU_OPTIONS_H

#include <stdint.h>
#include <stdio.h>

#define EMU_MAX_RANKS 64
#define EMU_MAX_ITERS 100000
#define EMU_MAX_EVAL_CALLS 64
#define EMU_MAX_TP_CALLS 4096
#define EMU_MAX_TP_ELEMENTS (1L << 22)
#define EMU_MAX_ACCUMULATE 64

enum emu_mode { EMU_MODE_PER_TENSOR = 0, EMU_MODE_DDP, EMU_MODE_HOROVOD, EMU_MODE_PER_PARAM_SYNC };
enum emu_cuda_api { EMU_CUDA_API_RUNTIME = 0, EMU_CUDA_API_DRIVER };
enum emu_wait { EMU_WAIT_ALL = 0, EMU_WAIT_PER_LAYER, EMU_WAIT_NONE };
/* --consumer: adversarial consumers of each result (consumer.c), one bit each */
enum emu_consumer_kind {
    EMU_CONSUMER_CTX_RECORD = 0, /* cuCtxRecordEvent, a side stream waits on it */
    EMU_CONSUMER_CTX_WAIT,       /* cuEventRecord on the call's stream, cuCtxWaitEvent */
    EMU_CONSUMER_LAUNCH_EVENT, /* cuLaunchKernelEx's LAUNCH_COMPLETION_EVENT / PROGRAMMATIC_EVENT */
    EMU_CONSUMER_GRAPH_WAIT,   /* a built graph: event-wait node, host node that checks */
    EMU_CONSUMER_IPC,          /* an interprocess event and memory handle, another process */
    EMU_CONSUMER_KINDS
};

/* --local-event: a host event one rank makes on its own (disturb.c) */
#define EMU_MAX_LOCAL_EVENTS 8
enum emu_local_kind { EMU_LOCAL_FREE = 0, EMU_LOCAL_CTX_SYNC };
struct emu_local_event {
    enum emu_local_kind kind;
    long grad; /* after the all-reduce that covers this gradient (backward order) */
    int rank;  /* the rank that makes it; -1: every rank */
    int every; /* in every K-th iteration */
};
#define EMU_MAX_EXTRA_STREAMS 32

/* Exit codes of prophet-emu. */
enum emu_exit {
    EMU_EXIT_OK = 0,      /* every rank ran and every all-reduced element was exact */
    EMU_EXIT_FAIL = 1,    /* a rank failed: wrong data, CUDA/NCCL error, crash */
    EMU_EXIT_USAGE = 2,   /* bad option, unreadable profile, cannot write --json */
    EMU_EXIT_TIMEOUT = 3, /* the run did not finish within --timeout; ranks were killed */
};

struct emu_options {
    int ranks;
    const char *profile;
    enum emu_mode mode;
    enum emu_cuda_api cuda_api; /* how every CUDA call is made (default runtime) */
    int current_stream;         /* per-param-sync: calls on the compute stream (PyTorch 2.8) */
    int scale_each;             /* per-param-sync: a kernel scales each result by 1/ranks */
    int unhooked_consumer; /* --scale-each's kernel through emuLaunchKernel (no interception) */
    unsigned consumers;    /* --consumer: bit k = enum emu_consumer_kind k */
    double watchdog_us;    /* 0 = off: a thread queries the work end events every N us */
    int iters;
    int warmup;
    const char *json;
    enum emu_wait wait;
    double scale;          /* multiplies every modelled time */
    double elements_scale; /* multiplies every tensor's elements and the byte thresholds */
    double bucket_mb;
    int bucket_view; /* DDP: results read only after the iteration's last bucket */
    double first_bucket_mb;
    double fusion_mb;
    double cycle_ms;
    long host_sync_at; /* gradient index, -1 = off */
    int mismatch_rank; /* -1 = off */
    int corrupt_rank;  /* -1 = off */
    int kill_rank;     /* -1 = off: this rank SIGKILLs itself mid-backward of kill_at_iter */
    int kill_at_iter;
    int kill_signal;    /* SIGKILL (the process dies, sockets close) or SIGSTOP (it hangs) */
    int change_at_iter; /* -1 = off: from this iteration on the middle gradient is dropped */
    int bw_change_iter; /* -1 = off: from this iteration on the links run at bw_change_Bps */
    double bw_change_Bps;
    double jitter_us; /* 0 = off: random host delay in [0, jitter_us] before each all-reduce */
    int rss_at;       /* -1 = off: sample RSS after this iteration and at the end */
    int loss_every;   /* 0 = off: a loss all-reduce and a host sync every K-th iteration */
    int eval_every;   /* 0 = off: an evaluation phase (metric all-reduces) every K-th iteration */
    int eval_calls;   /* repetitions of the evaluation's three metric all-reduces */
    int tp_comm;      /* 0 = off: all-reduces per forward + backward on a second communicator */
    long tp_elements; /* fp32 elements of each tensor-parallel all-reduce */
    int accumulate;   /* micro-steps per iteration; all-reduces in the last one only */
    /* rank-local disturbances (disturb.c) */
    struct emu_local_event local[EMU_MAX_LOCAL_EVENTS];
    int nlocal;
    int poll_wait;     /* the host polls each call's end event until it fired */
    int second_comm;   /* per-param-sync: odd gradients on a second communicator and stream */
    int extra_streams; /* consumers of each result on this many more streams */
    double chaos;      /* 0 = off: random local events after a call with this probability,
                        * and a thread per rank making them at random times */
    uint64_t seed;
    double timeout_s;
    int quiet;
};

const char *emu_mode_name(enum emu_mode m);
const char *emu_wait_name(enum emu_wait w);
const char *emu_cuda_api_name(enum emu_cuda_api a);
const char *emu_consumer_name(enum emu_consumer_kind k);

/* Parses argv into *o. Returns 0 to run, 1 when --help was printed (exit 0), or 2 after printing
 * one line on stderr (exit 2). */
int emu_options_parse(int argc, char **argv, struct emu_options *o);

void emu_options_usage(FILE *f);

#endif
