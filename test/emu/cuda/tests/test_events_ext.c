/* Context-wide records and waits, cuLaunchKernelEx's event attributes, graphs built from event
 * and host nodes, and the count of EXTERNAL flags (emu_ctx_event.c, emu_module.c,
 * emu_graph_exec.c, emu_event.c). Each ordering is shown behind a closed gate. */
#include <stdatomic.h>

#include "emu_test.h"

static atomic_int x;

static void set_x(void *arg)
{
    atomic_store(&x, (int)(intptr_t)arg);
}

static void noop(void **params)
{
    (void)params;
}

int main(void)
{
    static const struct emuKernelDef defs[] = {{.name = "noop", .fn = noop}};
    static const struct emuModuleImage img = {EMU_MODULE_MAGIC, 1, defs};
    CUcontext ctx = test_setup();
    CUstream a, b;
    CUevent e[6];
    CUmodule mod;
    CUfunction f;
    uint32_t *g = test_gate_new();

    OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    OK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    for (int i = 0; i < 6; i++)
        OK(cuEventCreate(&e[i], CU_EVENT_DISABLE_TIMING));
    OK(cuModuleLoadData(&mod, &img));
    OK(cuModuleGetFunction(&f, mod, "noop"));

    /* cuCtxRecordEvent: behind every stream's work */
    test_gate_close(a, g);
    OK(cuLaunchHostFunc(a, set_x, (void *)1));
    OK(cuCtxRecordEvent(ctx, e[0]));
    test_sleep_ms(20);
    CHECK_CU(cuEventQuery(e[0]), CUDA_ERROR_NOT_READY);
    test_gate_open(g);
    OK(cuEventSynchronize(e[0]));
    CHECK(atomic_load(&x) == 1);

    /* cuCtxWaitEvent: every stream of the context waits */
    test_gate_close(a, g);
    OK(cuEventRecord(e[1], a));
    OK(cuCtxWaitEvent(ctx, e[1]));
    OK(cuLaunchHostFunc(b, set_x, (void *)2));
    test_sleep_ms(20);
    CHECK(atomic_load(&x) == 1);
    test_gate_open(g);
    OK(cuStreamSynchronize(b));
    CHECK(atomic_load(&x) == 2);

    /* cuLaunchKernelEx: both event attributes record after the stream's work ahead */
    for (int programmatic = 0; programmatic < 2; programmatic++) {
        CUlaunchAttribute at = {0};
        CUlaunchConfig cfg = {0};
        if (programmatic) {
            at.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT;
            at.value.programmaticEvent.event = e[2];
        } else {
            at.id = CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT;
            at.value.launchCompletionEvent.event = e[2];
        }
        cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
        cfg.blockDimX = cfg.blockDimY = cfg.blockDimZ = 1;
        cfg.hStream = a;
        cfg.attrs = &at;
        cfg.numAttrs = 1;
        test_gate_close(a, g);
        OK(cuLaunchKernelEx(&cfg, f, NULL, NULL));
        test_sleep_ms(10);
        CHECK_CU(cuEventQuery(e[2]), CUDA_ERROR_NOT_READY);
        test_gate_open(g);
        OK(cuEventSynchronize(e[2]));
    }

    /* a graph [wait e3, host set_x(3), record e4]; the wait node moved to a never-recorded e5 */
    CUgraph gr;
    CUgraphExec ex;
    CUgraphNode n1, n2, n3;
    CUDA_HOST_NODE_PARAMS hp = {set_x, (void *)3};
    OK(cuGraphCreate(&gr, 0));
    OK(cuGraphAddEventWaitNode(&n1, gr, NULL, 0, e[3]));
    OK(cuGraphAddHostNode(&n2, gr, &n1, 1, &hp));
    OK(cuGraphAddEventRecordNode(&n3, gr, &n2, 1, e[4]));
    OK(cuGraphInstantiate(&ex, gr, 0));
    test_gate_close(a, g);
    OK(cuEventRecord(e[3], a));
    OK(cuGraphLaunch(ex, b));
    test_sleep_ms(20);
    CHECK(atomic_load(&x) == 2);
    CHECK_CU(cuEventQuery(e[4]), CUDA_ERROR_NOT_READY);
    test_gate_open(g);
    OK(cuEventSynchronize(e[4]));
    CHECK(atomic_load(&x) == 3);
    atomic_store(&x, 0);
    test_gate_close(a, g);
    OK(cuEventRecord(e[3], a));
    OK(cuGraphExecEventWaitNodeSetEvent(ex, n1, e[5]));
    OK(cuGraphLaunch(ex, b));
    OK(cuStreamSynchronize(b));
    CHECK(atomic_load(&x) == 3);
    test_gate_open(g);
    OK(cuStreamSynchronize(a));
    OK(cuGraphExecDestroy(ex));
    OK(cuGraphDestroy(gr));

    /* EXTERNAL flags are counted */
    uint64_t w = emuEventExternalOps(0), r = emuEventExternalOps(1);
    OK(cuEventRecordWithFlags(e[0], a, CU_EVENT_RECORD_EXTERNAL));
    OK(cuStreamWaitEvent(b, e[0], CU_EVENT_WAIT_EXTERNAL));
    OK(cuStreamWaitEvent(b, e[0], 0));
    CHECK(emuEventExternalOps(0) == w + 1 && emuEventExternalOps(1) == r + 1);
    OK(cuCtxSynchronize());
    printf("events_ext: ok\n");
    return 0;
}
