/* A PTX kernel that traps (the model of docs/completion-holding.md, "A dropped call", measured on
 * an H100): the sticky CUDA_ERROR_LAUNCH_FAILED; the gate written behind the trap never opens; a
 * consumer queued behind that gate on another stream never runs; every wait returns the error at
 * once and every later call fails, but cuCtxGetCurrent. A PTX entry without `trap;` runs. */
#include "emu_test.h"

static const char ptx[] = ".version 6.0\n.target sm_50\n.address_size 64\n"
                          ".visible .entry fine()\n{\n\tret;\n}\n"
                          ".visible .entry boom()\n{\n\ttrap;\n\tret;\n}\n";

static int consumed;

static void consumer(void *arg)
{
    (void)arg;
    __atomic_store_n(&consumed, 1, __ATOMIC_RELEASE);
}

int main(void)
{
    CUcontext ctx = test_setup(), cur = NULL;
    CUmodule mod;
    CUfunction fine, boom;
    CUstream x, s;
    CUevent e;
    CUdeviceptr p;
    uint32_t *gate = test_gate_new();

    OK(cuStreamCreate(&x, CU_STREAM_NON_BLOCKING));
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuEventCreate(&e, CU_EVENT_DEFAULT));
    CHECK_CU(cuModuleLoadData(&mod, ".version 6.0\n.entry broken( {"), CUDA_ERROR_INVALID_PTX);
    OK(cuModuleLoadData(&mod, ptx));
    OK(cuModuleGetFunction(&fine, mod, "fine"));
    OK(cuModuleGetFunction(&boom, mod, "boom"));
    OK(cuLaunchKernel(fine, 1, 1, 1, 1, 1, 1, 0, x, NULL, NULL));
    OK(cuStreamSynchronize(x));
    /* the consumer, behind the gate */
    test_gate_close(s, gate);
    OK(cuLaunchHostFunc(s, consumer, NULL));
    OK(cuEventRecord(e, s));
    /* the trap, and the gate behind it */
    OK(cuLaunchKernel(boom, 1, 1, 1, 1, 1, 1, 0, x, NULL, NULL));
    /* the trap runs on the stream's own thread: it may have struck before this call (then the
     * call fails with the sticky error and writes nothing), as on the real driver */
    CUresult wr =
        cuStreamWriteValue32(x, (CUdeviceptr)(uintptr_t)gate, 1, CU_STREAM_WRITE_VALUE_DEFAULT);
    CHECK(wr == CUDA_SUCCESS || wr == CUDA_ERROR_LAUNCH_FAILED);
    CHECK_CU(cuCtxSynchronize(), CUDA_ERROR_LAUNCH_FAILED);
    CHECK_CU(cuStreamSynchronize(s), CUDA_ERROR_LAUNCH_FAILED);
    CHECK_CU(cuStreamSynchronize(x), CUDA_ERROR_LAUNCH_FAILED);
    CHECK_CU(cuEventSynchronize(e), CUDA_ERROR_LAUNCH_FAILED);
    CHECK_CU(cuEventQuery(e), CUDA_ERROR_LAUNCH_FAILED);
    CHECK_CU(cuStreamQuery(s), CUDA_ERROR_LAUNCH_FAILED);
    CHECK_CU(cuMemAlloc(&p, 256), CUDA_ERROR_LAUNCH_FAILED);
    CHECK_CU(cuLaunchKernel(fine, 1, 1, 1, 1, 1, 1, 0, x, NULL, NULL), CUDA_ERROR_LAUNCH_FAILED);
    OK(cuCtxGetCurrent(&cur));
    CHECK(cur == ctx);
    test_sleep_ms(20);
    CHECK(__atomic_load_n(gate, __ATOMIC_ACQUIRE) == 0);
    CHECK(__atomic_load_n(&consumed, __ATOMIC_ACQUIRE) == 0);
    printf("trap: sticky CUDA_ERROR_LAUNCH_FAILED, gate shut, consumer never ran\n");
    return 0;
}
