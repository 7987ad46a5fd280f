/* The bounded stream queue (EMU_CUDA_QUEUE_DEPTH, a real driver's push buffer): a launch onto a
 * stream that holds D pending operations blocks the host until the stream finishes one, for every
 * queued operation kind; a stream's own thread, a capture and a record whose event the stream's
 * work reads never deadlock on it; 0 = unbounded.
 *
 * usage: emu_cuda_test_queue_depth bounded    (EMU_CUDA_QUEUE_DEPTH=4)
 *        emu_cuda_test_queue_depth unbounded  (EMU_CUDA_QUEUE_DEPTH=0)
 *        emu_cuda_test_queue_depth default    (EMU_CUDA_QUEUE_DEPTH unset: 1024) */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "emu_test.h"

#define QD_OPEN_MS 40  /* the opener thread opens the gate this long after it starts */
#define QD_HANG_S 20   /* a call that blocks for good: the test fails by alarm */
#define QD_KERNEL_MS 5 /* the paced kernels of the pacing check */

static void noop_kernel(void **params)
{
    (void)params;
}

static const struct emuKernelDef defs[] = {{.name = "noop", .fn = noop_kernel, .nparams = 0}};
static const struct emuModuleImage image = {
    .magic = EMU_MODULE_MAGIC, .nkernels = 1, .kernels = defs};

static CUfunction noop;
static unsigned depth;
static const char *stage = "start";

static void on_alarm(int sig)
{
    static const char msg[] = "queue_depth: a launch blocked for good (deadlock) in stage ";

    (void)sig;
    if (write(2, msg, sizeof(msg) - 1) < 0 || write(2, stage, strlen(stage)) < 0 ||
        write(2, "\n", 1) < 0)
        _exit(1);
    _exit(1);
}

static double ms_since(uint64_t t0)
{
    return (double)(emuNowNs() - t0) / 1e6;
}

/* ---- a gate opened by another thread after QD_OPEN_MS -------------------------------------- */

struct opener {
    uint32_t *gate;
    atomic_ullong opened_ns;
    pthread_t thread;
};

static void *opener_main(void *p)
{
    struct opener *o = p;

    test_sleep_ms(QD_OPEN_MS);
    atomic_store(&o->opened_ns, emuNowNs());
    test_gate_open(o->gate);
    return NULL;
}

static void opener_start(struct opener *o, uint32_t *gate)
{
    o->gate = gate;
    atomic_store(&o->opened_ns, 0);
    CHECK(pthread_create(&o->thread, NULL, opener_main, o) == 0);
}

static void opener_join(struct opener *o)
{
    CHECK(pthread_join(o->thread, NULL) == 0);
}

/* Fills s with a closed gate and zero-length kernels up to `pending` pending operations. */
static void fill_behind_gate(CUstream s, uint32_t *gate, unsigned pending)
{
    test_gate_close(s, gate);
    for (unsigned i = 1; i < pending; i++)
        OK(emuLaunchKernel(s, 0, NULL, NULL));
    CHECK(emuStreamOpsPending(s) == pending);
}

/* ---- each queued operation kind blocks on a full stream ------------------------------------ */

enum qd_kind { K_EMU_KERNEL, K_LAUNCH, K_COPY, K_MEMSET, K_RECORD, K_WAIT, K_HOST_FN, K_COUNT };

static const char *kind_name[K_COUNT] = {"emuLaunchKernel", "cuLaunchKernel", "cuMemcpyDtoDAsync",
                                         "cuMemsetD8Async", "cuEventRecord",  "cuStreamWaitEvent",
                                         "cuLaunchHostFunc"};

static void host_nothing(void *arg)
{
    (void)arg;
}

/* rec: the event recorded by K_RECORD; ev: the one waited for by K_WAIT */
static void launch_kind(enum qd_kind k, CUstream s, CUdeviceptr buf, CUevent rec, CUevent ev)
{
    switch (k) {
    case K_EMU_KERNEL:
        OK(emuLaunchKernel(s, 0, NULL, NULL));
        break;
    case K_LAUNCH:
        OK(cuLaunchKernel(noop, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
        break;
    case K_COPY:
        OK(cuMemcpyDtoDAsync(buf + 64, buf, 64, s));
        break;
    case K_MEMSET:
        OK(cuMemsetD8Async(buf, 7, 64, s));
        break;
    case K_RECORD:
        OK(cuEventRecord(rec, s));
        break;
    case K_WAIT:
        OK(cuStreamWaitEvent(s, ev, 0));
        break;
    case K_HOST_FN:
        OK(cuLaunchHostFunc(s, host_nothing, NULL));
        break;
    case K_COUNT:
        break;
    }
}

static void check_kinds_block(CUstream s, CUstream other)
{
    CUdeviceptr buf;
    CUevent ev, rec;
    uint32_t *gate = test_gate_new();
    struct opener o;

    OK(cuMemAlloc(&buf, 128));
    OK(cuEventCreate(&ev, 0));
    OK(cuEventCreate(&rec, 0));
    /* an event recorded behind a gate on another stream: a wait on it is a queued operation */
    uint32_t *other_gate = test_gate_new();
    test_gate_close(other, other_gate);
    OK(cuEventRecord(ev, other));
    for (int k = 0; k < K_COUNT; k++) {
        stage = kind_name[k];
        fill_behind_gate(s, gate, depth);
        opener_start(&o, gate);
        uint64_t t0 = emuNowNs();
        launch_kind((enum qd_kind)k, s, buf, rec, ev);
        uint64_t back = emuNowNs(), opened = atomic_load(&o.opened_ns);
        opener_join(&o);
        printf("%s on a full stream returned after %.1f ms\n", kind_name[k], ms_since(t0));
        CHECK(opened != 0 && back >= opened); /* it waited for the stream to finish one */
        CHECK(emuStreamOpsPending(s) <= depth);
        if (k == K_WAIT)
            test_gate_open(other_gate);
        OK(cuStreamSynchronize(s));
    }
    OK(cuStreamSynchronize(other));
    OK(cuEventDestroy(ev));
    OK(cuEventDestroy(rec));
    OK(cuMemFree(buf));
}

/* ---- a launch loop is paced by the stream ---------------------------------------------------- */

static void check_pacing(CUstream s)
{
    unsigned n = depth + 8;
    uint64_t t0;

    stage = "pacing";
    t0 = emuNowNs();
    for (unsigned i = 0; i < n; i++) {
        OK(emuLaunchKernel(s, QD_KERNEL_MS * 1000000ull, NULL, NULL));
        CHECK(emuStreamOpsPending(s) <= depth);
    }
    /* the last launch found room only once n - depth kernels had finished */
    double launched = ms_since(t0);
    printf("%u launches of %d ms kernels with depth %u took %.1f ms on the host\n", n, QD_KERNEL_MS,
           depth, launched);
    CHECK(launched >= (double)((n - depth) * QD_KERNEL_MS) * 0.9);
    OK(cuStreamSynchronize(s));
}

/* ---- no deadlock ----------------------------------------------------------------------------- */

struct self_launch {
    CUstream s;
    CUevent ev;
    atomic_int done;
};

/* A host function on s launches onto s, whose queue is full (it counts itself). */
static void launch_onto_own_stream(void *p)
{
    struct self_launch *a = p;

    for (int i = 0; i < 3; i++)
        if (emuLaunchKernel(a->s, 0, NULL, NULL) != CUDA_SUCCESS)
            return;
    if (cuEventRecord(a->ev, a->s) == CUDA_SUCCESS)
        atomic_store(&a->done, 1);
}

static void check_own_thread(CUstream s)
{
    struct self_launch a = {.s = s};
    uint32_t *gate = test_gate_new();

    stage = "a stream's own thread launching onto it";
    OK(cuEventCreate(&a.ev, CU_EVENT_DISABLE_TIMING));
    test_gate_close(s, gate);
    OK(cuLaunchHostFunc(s, launch_onto_own_stream, &a));
    for (unsigned i = 2; i < depth; i++)
        OK(emuLaunchKernel(s, 0, NULL, NULL));
    test_gate_open(gate);
    OK(cuStreamSynchronize(s));
    CHECK(atomic_load(&a.done) == 1);
    OK(cuEventDestroy(a.ev));
}

static void check_capture(CUstream s)
{
    uint32_t *gate = test_gate_new();
    CUgraph g;
    size_t n = 0;

    stage = "capture on a full stream";
    fill_behind_gate(s, gate, depth);
    OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    OK(emuLaunchKernel(s, 0, NULL, NULL)); /* recorded into the graph: never waits */
    OK(cuStreamEndCapture(s, &g));
    OK(emuGraphNumOps(g, &n));
    CHECK(n == 1);
    OK(cuGraphDestroy(g));
    test_gate_open(gate);
    OK(cuStreamSynchronize(s));
}

struct reads_event {
    CUevent ev;
    atomic_int go;
    atomic_int read;
};

/* A kernel that waits until the host thread says go, then reads the event's timestamp. */
static void read_event_time(void *p)
{
    struct reads_event *a = p;
    uint64_t ns = 0;

    while (!atomic_load(&a->go))
        test_sleep_ms(1);
    if (emuEventTimestampNs(a->ev, &ns) == CUDA_SUCCESS)
        atomic_store(&a->read, 1);
}

static void *say_go(void *p)
{
    struct reads_event *a = p;

    test_sleep_ms(QD_OPEN_MS);
    atomic_store(&a->go, 1);
    return NULL;
}

/* The host records event e onto a full stream whose running kernel reads e's timestamp before it
 * ends: the wait for room must not hold e's lock. */
static void check_record_read_by_stream(CUstream s, CUstream other)
{
    struct reads_event a;
    pthread_t t;

    stage = "a record of an event that the full stream's running kernel reads";
    OK(cuEventCreate(&a.ev, 0));
    atomic_store(&a.go, 0);
    atomic_store(&a.read, 0);
    OK(cuEventRecord(a.ev, other));
    OK(cuStreamSynchronize(other));
    OK(emuLaunchKernel(s, 0, read_event_time, &a));
    for (unsigned i = 1; i < depth; i++)
        OK(emuLaunchKernel(s, 0, NULL, NULL));
    CHECK(pthread_create(&t, NULL, say_go, &a) == 0);
    OK(cuEventRecord(a.ev, s)); /* room only once the reading kernel has ended */
    CHECK(pthread_join(t, NULL) == 0);
    OK(cuStreamSynchronize(s));
    CHECK(atomic_load(&a.read) == 1);
    OK(cuEventDestroy(a.ev));
}

/* ---- the three settings ---------------------------------------------------------------------- */

static void run_bounded(CUstream s, CUstream other)
{
    depth = 4;
    check_kinds_block(s, other);
    check_pacing(s);
    check_own_thread(s);
    check_capture(s);
    check_record_read_by_stream(s, other);
}

static void run_unbounded(CUstream s)
{
    uint32_t *gate = test_gate_new();
    unsigned n = 5000;

    stage = "unbounded";
    test_gate_close(s, gate);
    for (unsigned i = 0; i < n; i++)
        OK(emuLaunchKernel(s, 0, NULL, NULL));
    CHECK(emuStreamOpsPending(s) == n + 1);
    printf("%u launches behind a closed gate returned without blocking\n", n);
    test_gate_open(gate);
    OK(cuStreamSynchronize(s));
}

static void run_default(CUstream s)
{
    uint32_t *gate = test_gate_new();
    struct opener o;

    depth = 1024;
    stage = "default depth";
    fill_behind_gate(s, gate, depth);
    opener_start(&o, gate);
    uint64_t t0 = emuNowNs();
    OK(emuLaunchKernel(s, 0, NULL, NULL));
    uint64_t back = emuNowNs(), opened = atomic_load(&o.opened_ns);
    opener_join(&o);
    printf("launch %u on a full stream (default depth) returned after %.1f ms\n", depth + 1,
           ms_since(t0));
    CHECK(opened != 0 && back >= opened);
    OK(cuStreamSynchronize(s));
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    CUstream s, other;
    CUmodule mod;

    signal(SIGALRM, on_alarm);
    alarm(QD_HANG_S);
    test_setup();
    OK(cuModuleLoadData(&mod, &image));
    OK(cuModuleGetFunction(&noop, mod, "noop"));
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING));
    if (!strcmp(mode, "bounded"))
        run_bounded(s, other);
    else if (!strcmp(mode, "unbounded"))
        run_unbounded(s);
    else if (!strcmp(mode, "default"))
        run_default(s);
    else {
        fprintf(stderr, "usage: %s bounded|unbounded|default\n", argv[0]);
        return 2;
    }
    OK(cuStreamDestroy(s));
    OK(cuStreamDestroy(other));
    printf("queue_depth %s: ok\n", mode);
    return 0;
}
