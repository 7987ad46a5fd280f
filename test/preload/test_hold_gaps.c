/* Adversarial consumers of held all-reduces on the paths of issue 37 (items 3 and 6), under the
 * preload on the emulated cluster (2 ranks). Each scenario runs ITERS iterations in which every
 * communicator all-reduces two buffers (call 0 and call 1: a 2-call iteration the preload learns,
 * one block per iteration with PROPHET_POLICY=buckets); a consumer reads call 0's results between
 * the two calls, while call 0 is held, and compares every element with the exact sum.
 *   hold-gaps comms N      N communicators (ncclCommSplit), one non-blocking stream each; the
 *                          consumer is cuStreamSynchronize of every comm's stream, then a host
 *                          read of every call-0 buffer
 *                          (N > 64: the engine once tracked 64 communicators; the others' blocks
 *                          were never released by a host synchronisation)
 *   hold-gaps deps N       N communicators on N *blocking* streams; the consumer is
 *                          cuStreamSynchronize(NULL) (the legacy stream takes every blocking
 *                          stream's dependencies: N > 8 once overflowed the set), then a host read
 *   hold-gaps fork         one communicator; fork() while call 0 is held: the child uses CUDA
 *                          entry points through the preload (cuInit, a stream, a memset, records
 *                          and waits, a host function, stream/event/context synchronisation) and
 *                          must neither hang (alarm) nor touch the parent's held block; the
 *                          parent's results stay exact
 *   hold-gaps simulate     one communicator; in iteration 2, ncclGroupStart, an all-reduce,
 *                          ncclGroupSimulateEnd (it launches nothing: the buffer keeps its input);
 *                          then calls must still be held (the preload's group depth follows NCCL's)
 * Item 3 (one communicator; the consumer runs between call 0, held, and call 1):
 *   hold-gaps ctxrecord    cuCtxRecordEvent, a stream waits for it, a host function reads call 0
 *   hold-gaps ctxwait      call 0's stream records an event (virtual), cuCtxWaitEvent on it, a
 *                          host function on another stream of the context reads call 0
 *   hold-gaps launchattr   an event recorded behind call 0 (virtual) is then recorded by a
 *                          cuLaunchKernelEx attribute (PROGRAMMATIC_EVENT, LAUNCH_COMPLETION_EVENT
 *                          in turn) on a stream whose work ahead writes a value after 20 ms; after
 *                          call 1, a host function behind the event reads that value (the stale
 *                          virtual record, once issued, would fire first)
 *   hold-gaps graph        a graph [wait node, host node reading call 0, record node], its wait
 *                          node's event recorded behind call 0 (virtual), then cuGraphLaunch; in
 *                          turn the event is named only at the node's creation, only by
 *                          cuGraphExecEventWaitNodeSetEvent, only by cuGraphAddNode (another
 *                          graph), only by cuGraphEventWaitNodeSetEvent (a third)
 *   hold-gaps graphforget  an event named by a graph's record node, the graph and the event
 *                          destroyed, and a new event created with the same handle (the emulated
 *                          driver hands it out again: EMU_CUDA_EVENT_REUSE=1); each iteration the
 *                          new event is recorded behind call 0 (virtual) and a graph with no
 *                          event node is launched: call 0 must still be held after the launch (a
 *                          graph event not forgotten at its cuEventDestroy made the reused
 *                          handle's record real at every graph launch, releasing the block)
 *   hold-gaps decompress   call 0's stream records an event (virtual), a stream waits for it and
 *                          runs cuMemBatchDecompressAsync (stream work; the emulated "compression"
 *                          is the identity) from call 0's buffer; a host function reads the copy
 *   hold-gaps external     in a capture: a wait on a virtual record (absorbed), then
 *                          cuEventRecordWithFlags(EXTERNAL) on that stream and
 *                          cuStreamWaitEvent(EXTERNAL) on the virtual record: the driver must see
 *                          both flags (emuEventExternalOps)
 *   hold-gaps crosscomm    two communicators: comm 0 (two calls, held) and comm 1, one call an
 *                          iteration (a tensor-parallel-like comm: it never holds, its calls take
 *                          the preload's own path); after comm 0's call 0, comm 1's stream waits on
 *                          an event recorded behind it (virtual) and comm 1 all-reduces at once,
 *                          with no kernel between; a host function behind that call reads comm
 *                          0's call 0 (run with CUDA_DEVICE_MAX_CONNECTIONS=1 too: the one queue)
 *   hold-gaps othergroup   two communicators, each issued by its own thread: the main thread's
 *                          comm 0 (two calls, held) records an event behind call 0 (virtual) and
 *                          hands it to a second thread, which, inside ncclGroupStart/End, makes
 *                          its stream wait on it and all-reduces on comm 1 (one call an
 *                          iteration), then a host function reads comm 0's call 0; the main thread
 *                          issues call 1 (closing the block) 30 ms later. With one hardware queue a
 *                          gate on the still-open block, placed from the group's call, sat ahead of
 *                          the block's launch: a hang (run under timeout)
 * A scenario fails when nothing was held at its consumer ("nothing held"). Prints "rank R:
 * SCENARIO: ... exact" per rank; exit 0 when every rank passed. */
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "emu_cuda.h"
#include "emu_nccl_hooks.h"
#include "pt_check.h"

#define ITERS 40
#define COUNT 256 /* call 0; call 1 has COUNT - 64 elements */
#define MAXCOMM 128

#define FAIL PT_FAIL

static int g_ncomm, g_blocking;
static const char *g_scenario;

/* Small integers: fp32 sums stay exact. */
static float value_of(int r, int c, int k, int it)
{
    return (float)((r + 1) * 3 + c % 7 + k * 11 + it % 5);
}

static float sum_of(int nranks, int c, int k, int it)
{
    float s = 0;
    for (int r = 0; r < nranks; r++)
        s += value_of(r, c, k, it);
    return s;
}

struct comm_state {
    ncclComm_t comm;
    CUstream s;
    CUdeviceptr buf[2];
    struct emu_held_count held;
};

static struct comm_state cs[MAXCOMM];

static int count_of(int k)
{
    return COUNT - 64 * k;
}

static int issue(int rank, int c, int k, int it)
{
    ncclResult_t rc = ncclAllReduce((void *)cs[c].buf[k], (void *)cs[c].buf[k], count_of(k),
                                    ncclFloat32, ncclSum, cs[c].comm, cs[c].s);
    if (rc != ncclSuccess)
        FAIL("ncclAllReduce comm %d call %d iteration %d: %s", c, k, it, ncclGetErrorString(rc));
    emu_held_note(&cs[c].held);
    return 0;
}

/* Host read of device memory (the emulated driver's device pointers are host addresses). */
static int read_exact(int rank, int nranks, int c, int k, int it, const char *what)
{
    const float *p = (const float *)(uintptr_t)cs[c].buf[k];
    float want = sum_of(nranks, c, k, it);

    for (int i = 0; i < count_of(k); i++)
        if (p[i] != want)
            FAIL("%s: iteration %d comm %d call %d element %d: %g, expected %g (input %g)", what,
                 it, c, k, i, (double)p[i], (double)want, (double)value_of(rank, c, k, it));
    return 0;
}

static long long held_now(void)
{
    long long n = 0;
    for (int c = 0; c < g_ncomm; c++)
        n += emu_held_now(&cs[c].held) > 0 ? emu_held_now(&cs[c].held) : 0;
    return n;
}

/* ---- fork --------------------------------------------------------------------------------- */

static volatile int child_flag;
static void child_host_fn(void *arg)
{
    (void)arg;
    child_flag = 1;
}

/* The child of a process with held calls: CUDA through the preload, bounded by an alarm. */
static int fork_child(void)
{
    CUdevice dev;
    CUcontext ctx;
    CUstream s;
    CUevent e;
    CUdeviceptr d;
    unsigned v = 0;

    alarm(5);
    PT_CU(cuInit(0));
    PT_CU(cuDeviceGet(&dev, 0));
    PT_CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    PT_CU(cuCtxSetCurrent(ctx));
    PT_CU(cuStreamCreate(&s, 0));
    PT_CU(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    PT_CU(cuMemAlloc(&d, 64 * sizeof(float)));
    PT_CU(cuMemsetD32Async(d, 0x2a, 64, s));
    PT_CU(cuEventRecord(e, s));
    PT_CU(cuStreamWaitEvent(NULL, e, 0));
    PT_CU(cuLaunchHostFunc(s, child_host_fn, NULL));
    PT_CU(cuStreamSynchronize(s));
    PT_CU(cuEventSynchronize(e));
    PT_CU(cuCtxSynchronize());
    PT_CU(cuMemcpyDtoH(&v, d, sizeof(v)));
    PT_CU(cuStreamDestroy(s));
    if (!child_flag || v != 0x2a) {
        fprintf(stderr, "FAIL child: host function %d, value %#x\n", child_flag, v);
        return 1;
    }
    return 0;
}

static int fork_and_wait(int rank)
{
    struct timespec t0, t;
    pid_t p;
    int st = 0;

    fflush(NULL);
    if ((p = fork()) < 0)
        FAIL("fork");
    if (p == 0)
        _exit(fork_child());
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        pid_t w = waitpid(p, &st, WNOHANG);
        if (w == p)
            break;
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (t.tv_sec - t0.tv_sec > 10) {
            kill(p, SIGKILL);
            waitpid(p, &st, 0);
            FAIL("fork: the child HUNG (10 s)");
        }
        usleep(2000);
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        FAIL("fork: the child failed (status %#x%s)", st,
             WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM ? ": hung, alarm" : "");
    return 0;
}

/* ---- the scenarios -------------------------------------------------------------------------- */

struct legacy_check {
    int rank, nranks, it, bad;
    const float *copy; /* read instead of comm 0's call-0 buffer when set */
};

static void legacy_check_fn(void *arg)
{
    struct legacy_check *lc = arg;

    for (int c = 0; c < g_ncomm && lc->bad < 0; c++) {
        const float *p = c == 0 && lc->copy ? lc->copy : (const float *)(uintptr_t)cs[c].buf[0];
        for (int i = 0; i < count_of(0); i++)
            if (p[i] != sum_of(lc->nranks, c, 0, lc->it)) {
                lc->bad = c;
                break;
            }
    }
}

/* ---- item 3 --------------------------------------------------------------------------------- */

static CUcontext g_ctx;
static CUstream g_c, g_k;        /* the consumer's stream; the launch's stream (launchattr) */
static CUevent g_ev[6];          /* recorded behind call 0 */
static struct legacy_check g_lc; /* the host function's (or host node's) verdict */
static CUfunction g_noop;
static CUgraphExec g_exec, g_exec2, g_exec3;
static CUgraphNode g_wait_node;
static CUevent g_reused;    /* graphforget: a destroyed graph event's handle, handed out again */
static volatile int g_kval; /* written by the launch stream's work ahead of the launch */

struct kcheck {
    int want, got;
};
static struct kcheck g_kc;

static void noop_kernel(void **params)
{
    (void)params;
}

static void noop_host_fn(void *arg)
{
    (void)arg;
}

static void slow_writer_fn(void *arg)
{
    usleep(20000);
    __atomic_store_n(&g_kval, *(int *)arg, __ATOMIC_RELEASE);
}

static void kcheck_fn(void *arg)
{
    struct kcheck *k = arg;
    k->got = __atomic_load_n(&g_kval, __ATOMIC_ACQUIRE);
}

static int item3_setup(int rank)
{
    static const struct emuKernelDef defs[] = {{.name = "noop", .fn = noop_kernel}};
    static const struct emuModuleImage img = {EMU_MODULE_MAGIC, 1, defs};
    CUgraphNode host_node, rec_node;
    CUDA_HOST_NODE_PARAMS hp = {legacy_check_fn, &g_lc};
    CUmodule mod;
    CUgraph g;

    PT_CU(cuStreamCreate(&g_c, CU_STREAM_NON_BLOCKING));
    PT_CU(cuStreamCreate(&g_k, CU_STREAM_NON_BLOCKING));
    for (int i = 0; i < 6; i++)
        PT_CU(cuEventCreate(&g_ev[i], CU_EVENT_DISABLE_TIMING));
    PT_CU(cuModuleLoadData(&mod, &img));
    PT_CU(cuModuleGetFunction(&g_noop, mod, "noop"));
    if (!strcmp(g_scenario, "graphforget")) {
        CUevent old;
        PT_CU(cuEventCreate(&old, CU_EVENT_DISABLE_TIMING));
        PT_CU(cuGraphCreate(&g, 0));
        PT_CU(cuGraphAddEventRecordNode(&rec_node, g, NULL, 0, old));
        PT_CU(cuGraphDestroy(g));
        PT_CU(cuEventDestroy(old));
        PT_CU(cuEventCreate(&g_reused, CU_EVENT_DISABLE_TIMING));
        if (g_reused != old)
            FAIL("graphforget: the new event did not get the destroyed one's handle "
                 "(EMU_CUDA_EVENT_REUSE=1 not set?): nothing to test");
        /* a graph without event nodes (its host node reads nothing) */
        CUDA_HOST_NODE_PARAMS none = {noop_host_fn, NULL};
        PT_CU(cuGraphCreate(&g, 0));
        PT_CU(cuGraphAddHostNode(&host_node, g, NULL, 0, &none));
        PT_CU(cuGraphInstantiate(&g_exec, g, 0));
        PT_CU(cuGraphDestroy(g));
    }
    if (!strcmp(g_scenario, "graph")) {
        PT_CU(cuGraphCreate(&g, 0));
        PT_CU(cuGraphAddEventWaitNode(&g_wait_node, g, NULL, 0, g_ev[0]));
        PT_CU(cuGraphAddHostNode(&host_node, g, &g_wait_node, 1, &hp));
        PT_CU(cuGraphAddEventRecordNode(&rec_node, g, &host_node, 1, g_ev[2]));
        PT_CU(cuGraphInstantiate(&g_exec, g, 0));
        PT_CU(cuGraphDestroy(g));
        /* the same through cuGraphAddNode (wait node on g_ev[3]) */
        CUgraphNodeParams np;
        CUgraphNode n1, n2;
        PT_CU(cuGraphCreate(&g, 0));
        memset(&np, 0, sizeof(np));
        np.type = CU_GRAPH_NODE_TYPE_WAIT_EVENT;
        np.eventWait.event = g_ev[3];
        PT_CU(cuGraphAddNode(&n1, g, NULL, NULL, 0, &np));
        memset(&np, 0, sizeof(np));
        np.type = CU_GRAPH_NODE_TYPE_HOST;
        np.host.fn = legacy_check_fn;
        np.host.userData = &g_lc;
        PT_CU(cuGraphAddNode(&n2, g, &n1, NULL, 1, &np));
        PT_CU(cuGraphInstantiate(&g_exec2, g, 0));
        PT_CU(cuGraphDestroy(g));
        /* a wait node made on a never-recorded event, moved to g_ev[4] before instantiation */
        PT_CU(cuGraphCreate(&g, 0));
        PT_CU(cuGraphAddEventWaitNode(&n1, g, NULL, 0, g_ev[5]));
        PT_CU(cuGraphAddHostNode(&n2, g, &n1, 1, &hp));
        PT_CU(cuGraphEventWaitNodeSetEvent(n1, g_ev[4]));
        PT_CU(cuGraphInstantiate(&g_exec3, g, 0));
        PT_CU(cuGraphDestroy(g));
    }
    (void)rank;
    return 0;
}

static int launch_with_event(CUevent e, int programmatic)
{
    CUlaunchAttribute at;
    CUlaunchConfig cfg;

    memset(&at, 0, sizeof(at));
    memset(&cfg, 0, sizeof(cfg));
    if (programmatic) {
        at.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT;
        at.value.programmaticEvent.event = e;
    } else {
        at.id = CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT;
        at.value.launchCompletionEvent.event = e;
    }
    cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
    cfg.blockDimX = cfg.blockDimY = cfg.blockDimZ = 1;
    cfg.hStream = g_k;
    cfg.attrs = &at;
    cfg.numAttrs = 1;
    PT_CU(cuLaunchKernelEx(&cfg, g_noop, NULL, NULL));
    return 0;
}

/* Between call 0 (held) and call 1. */
static int item3_consume(int rank, int nranks, int it)
{
    static int want;
    CUstream s = cs[0].s;

    g_lc = (struct legacy_check){rank, nranks, it, -1, NULL};
    if (!strcmp(g_scenario, "ctxrecord")) {
        PT_CU(cuCtxRecordEvent(g_ctx, g_ev[0]));
        PT_CU(cuStreamWaitEvent(g_c, g_ev[0], 0));
        PT_CU(cuLaunchHostFunc(g_c, legacy_check_fn, &g_lc));
    } else if (!strcmp(g_scenario, "ctxwait")) {
        PT_CU(cuEventRecord(g_ev[0], s));
        PT_CU(cuCtxWaitEvent(g_ctx, g_ev[0]));
        PT_CU(cuLaunchHostFunc(g_c, legacy_check_fn, &g_lc));
    } else if (!strcmp(g_scenario, "launchattr")) {
        want = 1000 + it;
        PT_CU(cuEventRecord(g_ev[1], s));
        PT_CU(cuLaunchHostFunc(g_k, slow_writer_fn, &want));
        if (launch_with_event(g_ev[1], it % 2))
            return 1;
    } else if (!strcmp(g_scenario, "graph")) {
        /* in turn: the wait node's event named at its creation, by the executable graph's set,
         * by cuGraphAddNode, by the graph node's set */
        static const int ev[4] = {0, 1, 3, 4};
        CUevent e = g_ev[ev[it % 4]];
        PT_CU(cuEventRecord(e, s));
        if (it % 4 < 2) {
            PT_CU(cuGraphExecEventWaitNodeSetEvent(g_exec, g_wait_node, e));
            PT_CU(cuGraphLaunch(g_exec, g_c));
        } else {
            PT_CU(cuGraphLaunch(it % 4 == 2 ? g_exec2 : g_exec3, g_c));
        }
    } else if (!strcmp(g_scenario, "graphforget")) {
        long long before;
        PT_CU(cuEventRecord(g_reused, s));
        before = held_now();
        PT_CU(cuGraphLaunch(g_exec, g_c));
        if (before > 0 && held_now() == 0)
            FAIL("graphforget: iteration %d: the launch of a graph without event nodes released "
                 "call 0 (the destroyed graph event's handle, reused, was still a graph event)",
                 it);
    } else if (!strcmp(g_scenario, "decompress")) {
        static CUdeviceptr copy;
        CUmemDecompressParams dp;
        size_t bad = 0;
        if (!copy)
            PT_CU(cuMemAlloc(&copy, COUNT * sizeof(float)));
        memset(&dp, 0, sizeof(dp));
        dp.srcNumBytes = dp.dstNumBytes = (size_t)count_of(0) * sizeof(float);
        dp.src = (const void *)(uintptr_t)cs[0].buf[0];
        dp.dst = (void *)(uintptr_t)copy;
        PT_CU(cuEventRecord(g_ev[0], s));
        PT_CU(cuStreamWaitEvent(g_c, g_ev[0], 0));
        PT_CU(cuMemBatchDecompressAsync(&dp, 1, 0, &bad, g_c));
        g_lc.copy = (const float *)(uintptr_t)copy;
        PT_CU(cuLaunchHostFunc(g_c, legacy_check_fn, &g_lc));
    } else if (!strcmp(g_scenario, "external")) {
        uint64_t w0 = emuEventExternalOps(0), r0 = emuEventExternalOps(1);
        CUgraph gr = NULL;
        PT_CU(cuEventRecord(g_ev[0], s));
        PT_CU(cuStreamBeginCapture(g_c, CU_STREAM_CAPTURE_MODE_RELAXED));
        PT_CU(cuStreamWaitEvent(g_c, g_ev[0], 0));
        PT_CU(cuEventRecordWithFlags(g_ev[2], g_c, CU_EVENT_RECORD_EXTERNAL));
        PT_CU(cuStreamWaitEvent(g_c, g_ev[0], CU_EVENT_WAIT_EXTERNAL));
        PT_CU(cuStreamEndCapture(g_c, &gr));
        PT_CU(cuGraphDestroy(gr));
        if (emuEventExternalOps(0) != w0 + 1 || emuEventExternalOps(1) != r0 + 1)
            FAIL("external: iteration %d: the driver saw %llu EXTERNAL wait(s) and %llu EXTERNAL "
                 "record(s), expected 1 and 1",
                 it, (unsigned long long)(emuEventExternalOps(0) - w0),
                 (unsigned long long)(emuEventExternalOps(1) - r0));
    }
    return 0;
}

/* After call 1 (launchattr: the stale record, if any, has been issued now). */
static int item3_after(int rank, int it)
{
    (void)rank;
    if (!strcmp(g_scenario, "launchattr")) {
        g_kc = (struct kcheck){1000 + it, -1};
        PT_CU(cuStreamWaitEvent(g_c, g_ev[1], 0));
        PT_CU(cuLaunchHostFunc(g_c, kcheck_fn, &g_kc));
    }
    return 0;
}

/* After the iteration's context synchronisation: the verdicts. */
static int item3_check(int rank, int it)
{
    if (g_lc.bad >= 0)
        FAIL("%s: iteration %d: the consumer read call 0 before its all-reduce ran", g_scenario,
             it);
    if (!strcmp(g_scenario, "launchattr") && g_kc.got != g_kc.want)
        FAIL("launchattr: iteration %d: behind the launch's event the value was %d, expected %d "
             "(the event fired before the launch's stream reached it)",
             it, g_kc.got, g_kc.want);
    return 0;
}

static int is_item3(void)
{
    static const char *const names[] = {"ctxrecord",   "ctxwait",    "launchattr", "graph",
                                        "graphforget", "decompress", "external"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (!strcmp(g_scenario, names[i]))
            return 1;
    return 0;
}

static int g_cross;
static CUevent g_cross_ev;

/* crosscomm: comm 0's call-0 result, read on the GPU timeline behind comm 1's call. */
static void cross_check_fn(void *arg)
{
    struct legacy_check *lc = arg;
    const float *p = (const float *)(uintptr_t)cs[0].buf[0];

    for (int i = 0; i < count_of(0) && lc->bad < 0; i++)
        if (p[i] != sum_of(lc->nranks, 0, 0, lc->it))
            lc->bad = 0;
}

/* ---- othergroup: a second thread's group behind the main thread's open block ---------------- */

static int g_other;
static pthread_mutex_t og_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t og_cond = PTHREAD_COND_INITIALIZER;
static int og_stage, og_it, og_rank, og_nranks, og_err; /* stage: 0 idle, 1 go, 2 issued, 3 stop */

static void og_set(int stage)
{
    pthread_mutex_lock(&og_lock);
    og_stage = stage;
    pthread_cond_broadcast(&og_cond);
    pthread_mutex_unlock(&og_lock);
}

static void og_await(int stage)
{
    pthread_mutex_lock(&og_lock);
    while (og_stage != stage)
        pthread_cond_wait(&og_cond, &og_lock);
    pthread_mutex_unlock(&og_lock);
}

static void *og_thread(void *arg)
{
    (void)arg;
    if (cuCtxSetCurrent(g_ctx) != CUDA_SUCCESS)
        og_err = 1;
    for (;;) {
        pthread_mutex_lock(&og_lock);
        while (og_stage != 1 && og_stage != 3)
            pthread_cond_wait(&og_cond, &og_lock);
        int stop = og_stage == 3, it = og_it;
        pthread_mutex_unlock(&og_lock);
        if (stop)
            return NULL;
        g_lc = (struct legacy_check){og_rank, og_nranks, it, -1, NULL};
        if (ncclGroupStart() != ncclSuccess ||
            cuStreamWaitEvent(cs[1].s, g_cross_ev, 0) != CUDA_SUCCESS ||
            ncclAllReduce((void *)cs[1].buf[1], (void *)cs[1].buf[1], count_of(1), ncclFloat32,
                          ncclSum, cs[1].comm, cs[1].s) != ncclSuccess ||
            ncclGroupEnd() != ncclSuccess ||
            cuLaunchHostFunc(cs[1].s, cross_check_fn, &g_lc) != CUDA_SUCCESS)
            og_err = 1;
        og_set(2);
    }
}

/* The main thread's loop of othergroup (the second thread issues comm 1's calls). */
static int og_loop(int rank, int nranks, long long *held_at)
{
    pthread_t t;
    struct timespec pause = {0, 30 * 1000 * 1000};

    og_rank = rank;
    og_nranks = nranks;
    if (pthread_create(&t, NULL, og_thread, NULL) != 0)
        FAIL("othergroup: pthread_create");
    for (int it = 0; it < ITERS; it++) {
        for (int k = 0; k < 2; k++)
            pt_fill(cs[0].buf[k], value_of(rank, 0, k, it), count_of(k), cs[0].s);
        pt_fill(cs[1].buf[1], value_of(rank, 1, 1, it), count_of(1), cs[1].s);
        PT_CU(cuStreamSynchronize(cs[1].s)); /* comm 1's input ready before the other thread */
        if (issue(rank, 0, 0, it))
            return 1;
        if (held_now() > *held_at)
            *held_at = held_now();
        PT_CU(cuEventRecord(g_cross_ev, cs[0].s));
        pthread_mutex_lock(&og_lock);
        og_it = it;
        pthread_mutex_unlock(&og_lock);
        og_set(1);
        nanosleep(&pause, NULL); /* the other thread waits and issues its group meanwhile */
        if (issue(rank, 0, 1, it))
            return 1;
        og_await(2);
        PT_CU(cuCtxSynchronize());
        if (og_err)
            FAIL("othergroup: the second thread's calls failed");
        if (g_lc.bad >= 0)
            FAIL("othergroup: iteration %d: a host function behind the second thread's call read "
                 "comm 0's call 0 before its all-reduce ran",
                 it);
        if (read_exact(rank, nranks, 0, 0, it, "othergroup") ||
            read_exact(rank, nranks, 0, 1, it, "othergroup") ||
            read_exact(rank, nranks, 1, 1, it, "othergroup"))
            return 1;
        og_set(0);
    }
    og_set(3);
    pthread_join(t, NULL);
    return 0;
}

static int consume(int rank, int nranks, int it, long long *held_at)
{
    long long h = held_now();

    if (h > *held_at)
        *held_at = h;
    if (!strcmp(g_scenario, "comms")) {
        /* each comm's stream synchronised (a context synchronisation names no held call and
         * completes none: docs/completion-holding.md, "Rank-local host events") */
        for (int c = 0; c < g_ncomm; c++)
            PT_CU(cuStreamSynchronize(cs[c].s));
    } else if (!strcmp(g_scenario, "deps")) {
        /* a host function on the legacy stream reads every call-0 result */
        struct legacy_check lc = {rank, nranks, it, -1, NULL};
        PT_CU(cuLaunchHostFunc(NULL, legacy_check_fn, &lc));
        PT_CU(cuStreamSynchronize(NULL));
        if (lc.bad >= 0)
            FAIL("deps: a host function on the legacy stream read comm %d's call 0 of iteration "
                 "%d before its all-reduce ran",
                 lc.bad, it);
    } else if (g_cross) {
        /* comm 1's stream waits on an event recorded behind comm 0's call 0; comm 1's call
         * follows at once (rank_main), then a host function reads comm 0's call 0 */
        g_lc = (struct legacy_check){rank, nranks, it, -1, NULL};
        PT_CU(cuEventRecord(g_cross_ev, cs[0].s));
        PT_CU(cuStreamWaitEvent(cs[1].s, g_cross_ev, 0));
        return 0;
    } else if (!strcmp(g_scenario, "fork")) {
        if (it == 30 && fork_and_wait(rank))
            return 1;
        return 0; /* call 0 is checked with call 1 */
    } else {
        return is_item3() ? item3_consume(rank, nranks, it) : 0;
    }
    for (int c = 0; c < g_ncomm; c++)
        if (read_exact(rank, nranks, c, 0, it, g_scenario))
            return 1;
    return 0;
}

/* A group that is only simulated, on a side communicator (so that the learned iteration of the
 * main one is untouched): the depth it leaves must be NCCL's (0). */
static int simulate_group(int rank, ncclComm_t side, int it)
{
    ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
    CUdeviceptr d;
    float *p;

    PT_CU(cuMemAlloc(&d, COUNT * sizeof(float)));
    p = (float *)(uintptr_t)d;
    pt_fill(d, value_of(rank, 9, 0, it), COUNT, cs[0].s);
    PT_NCCL(ncclGroupStart());
    PT_NCCL(ncclAllReduce((void *)d, (void *)d, COUNT, ncclFloat32, ncclSum, side, cs[0].s));
    PT_NCCL(ncclGroupSimulateEnd(&sim));
    PT_CU(cuStreamSynchronize(cs[0].s));
    if (p[0] != value_of(rank, 9, 0, it))
        FAIL("simulate: the simulated group ran (%g)", (double)p[0]);
    PT_CU(cuMemFree(d));
    return 0;
}

static int rank_main(int rank, int nranks, const ncclUniqueId *id)
{
    CUcontext ctx;
    ncclComm_t parent, side = NULL;
    long long held_at = 0;

    pt_rank_setup(rank, nranks, id, &ctx, &parent);
    g_ctx = ctx;
    if (is_item3() && item3_setup(rank))
        return 1;
    if (g_cross || g_other)
        PT_CU(cuEventCreate(&g_cross_ev, CU_EVENT_DISABLE_TIMING));
    if (!strcmp(g_scenario, "simulate"))
        PT_NCCL(ncclCommSplit(parent, 0, rank, &side, NULL));
    for (int c = 0; c < g_ncomm; c++) {
        if (c == 0)
            cs[c].comm = parent;
        else
            PT_NCCL(ncclCommSplit(parent, 0, rank, &cs[c].comm, NULL));
        PT_CU(cuStreamCreate(&cs[c].s, g_blocking ? 0 : CU_STREAM_NON_BLOCKING));
        for (int k = 0; k < 2; k++)
            PT_CU(cuMemAlloc(&cs[c].buf[k], COUNT * sizeof(float)));
        cs[c].held.comm = cs[c].comm;
    }
    for (int it = 0; it < ITERS && !g_other; it++) {
        for (int c = 0; c < g_ncomm; c++)
            for (int k = 0; k < 2; k++)
                pt_fill(cs[c].buf[k], value_of(rank, c, k, it), count_of(k), cs[c].s);
        if (side && it == 2 && simulate_group(rank, side, it))
            return 1;
        for (int c = 0; c < g_ncomm; c++)
            if (!(g_cross && c == 1) && issue(rank, c, 0, it))
                return 1;
        if (consume(rank, nranks, it, &held_at))
            return 1;
        /* crosscomm: comm 1's call first, while comm 0's block is still open */
        for (int j = 0; j < g_ncomm; j++) {
            int c = g_cross ? g_ncomm - 1 - j : j;
            if (issue(rank, c, 1, it))
                return 1;
        }
        if (is_item3() && item3_after(rank, it))
            return 1;
        if (g_cross) /* behind comm 1's call: a read of comm 0's call 0 */
            PT_CU(cuLaunchHostFunc(cs[1].s, cross_check_fn, &g_lc));
        PT_CU(cuCtxSynchronize());
        if (is_item3() && item3_check(rank, it))
            return 1;
        if (g_cross && g_lc.bad >= 0)
            FAIL("crosscomm: iteration %d: a host function behind comm 1's call read comm 0's "
                 "call 0 before its all-reduce ran",
                 it);
        for (int c = 0; c < g_ncomm; c++)
            for (int k = 0; k < 2; k++)
                if (!(g_cross && c == 1 && k == 0) &&
                    read_exact(rank, nranks, c, k, it, "end of iteration"))
                    return 1;
    }
    if (g_other && og_loop(rank, nranks, &held_at))
        return 1;
    if (held_at <= 0)
        FAIL("%s: nothing held at the consumer: nothing to test", g_scenario);
    if (side)
        PT_NCCL(ncclCommDestroy(side));
    for (int c = g_ncomm - 1; c >= 0; c--) {
        PT_NCCL(ncclCommDestroy(cs[c].comm));
        cuStreamDestroy(cs[c].s);
    }
    printf("rank %d: %s: %d comm(s), up to %lld held at the consumer; %d iterations exact\n", rank,
           g_scenario, g_ncomm, held_at, ITERS);
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv)
{
    g_scenario = argc > 1 ? argv[1] : "";
    g_ncomm = argc > 2 ? atoi(argv[2]) : 1;
    if (!strcmp(g_scenario, "deps"))
        g_blocking = 1;
    if (!strcmp(g_scenario, "crosscomm")) {
        g_cross = 1;
        g_ncomm = 2;
    }
    if (!strcmp(g_scenario, "othergroup")) {
        g_other = 1;
        g_ncomm = 2;
    }
    if (g_ncomm < 1 || g_ncomm > MAXCOMM ||
        (strcmp(g_scenario, "comms") && strcmp(g_scenario, "deps") && strcmp(g_scenario, "fork") &&
         strcmp(g_scenario, "simulate") && !g_cross && !g_other && !is_item3())) {
        fprintf(stderr, "usage: hold-gaps comms|deps|fork|simulate|ctxrecord|ctxwait|launchattr|"
                        "graph|graphforget|decompress|external|crosscomm|othergroup [NCOMM]\n");
        return 2;
    }
    return pt_run_ranks(2, rank_main);
}
