/* Interprocess events and memory between two processes (emu_ipc.c): the parent exports a device
 * buffer (cuIpcGetMemHandle) and an event made with CU_EVENT_INTERPROCESS (cuIpcGetEventHandle);
 * the child, forked before either used the driver, opens both and sees the parent's records:
 *   1. a record behind a 150 ms kernel that writes the buffer: cuEventSynchronize in the child
 *      returns after it, and the child reads what the kernel wrote;
 *   2. a record behind a closed gate: cuEventQuery answers NOT_READY in the child, a copy queued
 *      behind cuStreamWaitEvent reads the gated memset's value once the parent opens the gate;
 *   3. the child writes the buffer and records the opened event; the parent's stream waits on
 *      its own event and reads the child's value.
 * Misuse: cuIpcGetEventHandle on an event without CU_EVENT_INTERPROCESS, a handle opened in the
 * process that made it, cuIpcGetMemHandle inside an allocation. EMU_CUDA_IPC_MEM=1 (set here). */
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "emu_test.h"

#define N 4096

struct handles {
    CUipcMemHandle mem;
    CUipcEventHandle ev;
};

static int to_child[2], to_parent[2];

static void say(int fd, char c)
{
    CHECK(write(fd, &c, 1) == 1);
}

static char hear(int fd)
{
    char c = 0;
    CHECK(read(fd, &c, 1) == 1);
    return c;
}

static void fill_fn(void *arg)
{
    float *p = arg;
    for (int i = 0; i < N; i++)
        p[i] = 2.0f;
}

static int all_equal(const float *h, float v)
{
    for (int i = 0; i < N; i++)
        if (h[i] != v)
            return 0;
    return 1;
}

static uint32_t bits(float v)
{
    uint32_t b;
    memcpy(&b, &v, sizeof(b));
    return b;
}

static int child(void)
{
    static float h[N];
    struct handles hs;
    CUstream cs;
    CUevent ev, never;
    CUdeviceptr d;

    CHECK(read(to_child[0], &hs, sizeof(hs)) == (ssize_t)sizeof(hs));
    test_setup();
    OK(cuStreamCreate(&cs, CU_STREAM_NON_BLOCKING));
    OK(cuIpcOpenMemHandle(&d, hs.mem, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
    OK(cuIpcOpenEventHandle(&ev, hs.ev));
    /* 1: the parent's record behind a kernel */
    CHECK(hear(to_child[0]) == '1');
    OK(cuEventSynchronize(ev));
    OK(cuEventQuery(ev));
    OK(cuMemcpyDtoH(h, d, sizeof(h)));
    CHECK(all_equal(h, 2.0f));
    say(to_parent[1], 'k'); /* the next record would be the latest */
    /* 2: behind a closed gate */
    CHECK(hear(to_child[0]) == '2');
    CHECK_CU(cuEventQuery(ev), CUDA_ERROR_NOT_READY);
    OK(cuStreamWaitEvent(cs, ev, 0));
    OK(cuMemcpyDtoHAsync(h, d, sizeof(h), cs));
    test_sleep_ms(20);
    CHECK_CU(cuStreamQuery(cs), CUDA_ERROR_NOT_READY);
    say(to_parent[1], 'o'); /* open the gate */
    OK(cuStreamSynchronize(cs));
    CHECK(all_equal(h, 3.0f));
    OK(cuEventQuery(ev));
    /* 3: the child records */
    OK(cuMemsetD32Async(d, bits(4.0f), N, cs));
    OK(cuEventRecord(ev, cs));
    say(to_parent[1], '3');
    OK(cuStreamSynchronize(cs));
    CHECK(hear(to_child[0]) == 'x');
    /* misuse: an event of this process without the flag; a handle of this process */
    OK(cuEventCreate(&never, CU_EVENT_DISABLE_TIMING));
    CUipcEventHandle eh;
    CHECK_CU(cuIpcGetEventHandle(&eh, never), CUDA_ERROR_INVALID_VALUE);
    OK(cuEventDestroy(never));
    OK(cuEventDestroy(ev));
    OK(cuIpcCloseMemHandle(d));
    CHECK_CU(cuIpcCloseMemHandle(d), CUDA_ERROR_INVALID_VALUE);
    OK(cuStreamDestroy(cs));
    return 0;
}

static void parent(pid_t pid)
{
    static float h[N];
    struct handles hs;
    CUstream s;
    CUevent ev, opened;
    CUdeviceptr d;

    test_setup();
    uint32_t *gate = test_gate_new();
    OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    OK(cuMemAlloc(&d, N * sizeof(float)));
    OK(cuMemsetD32(d, bits(1.0f), N));
    OK(cuIpcGetMemHandle(&hs.mem, d));
    CHECK_CU(cuIpcGetMemHandle(&hs.mem, d + 256), CUDA_ERROR_INVALID_VALUE);
    OK(cuIpcGetMemHandle(&hs.mem, d)); /* twice: the same memory */
    CHECK_CU(cuEventCreate(&ev, CU_EVENT_INTERPROCESS), CUDA_ERROR_INVALID_VALUE);
    OK(cuEventCreate(&ev, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING));
    OK(cuIpcGetEventHandle(&hs.ev, ev));
    CHECK_CU(cuIpcOpenEventHandle(&opened, hs.ev), CUDA_ERROR_INVALID_CONTEXT);
    CHECK(write(to_child[1], &hs, sizeof(hs)) == (ssize_t)sizeof(hs));
    /* 1 */
    OK(emuLaunchKernel(s, 150000000ull, fill_fn, (void *)(uintptr_t)d));
    OK(cuEventRecord(ev, s));
    say(to_child[1], '1');
    CHECK(hear(to_parent[0]) == 'k');
    /* 2 */
    test_gate_close(s, gate);
    OK(cuMemsetD32Async(d, bits(3.0f), N, s));
    OK(cuEventRecord(ev, s));
    say(to_child[1], '2');
    CHECK(hear(to_parent[0]) == 'o');
    test_gate_open(gate);
    /* 3: the child's record of the same event */
    CHECK(hear(to_parent[0]) == '3');
    OK(cuStreamWaitEvent(s, ev, 0));
    OK(cuMemcpyDtoHAsync(h, d, sizeof(h), s));
    OK(cuStreamSynchronize(s));
    CHECK(all_equal(h, 4.0f));
    OK(cuEventSynchronize(ev));
    say(to_child[1], 'x');
    int st = 0;
    CHECK(waitpid(pid, &st, 0) == pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    OK(cuEventDestroy(ev));
    OK(cuMemFree(d));
    OK(cuStreamDestroy(s));
}

int main(void)
{
    setenv("EMU_CUDA_IPC_MEM", "1", 1); /* device memory that cuIpcGetMemHandle can share */
    CHECK(pipe(to_child) == 0 && pipe(to_parent) == 0);
    pid_t pid = fork(); /* before either process uses the driver */
    CHECK(pid >= 0);
    if (pid == 0)
        _exit(child());
    parent(pid);
    printf("PASS\n");
    return 0;
}
