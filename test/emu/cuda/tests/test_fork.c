/* fork: a child that calls cuInit after fork works, whether or not the parent had used the
 * driver (the parent's stream threads do not exist in the child). */
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include "emu_test.h"

/* TSan cannot start threads in the child of a multi-threaded process: skip that part there. */
#if defined(__SANITIZE_THREAD__)
#define EMU_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define EMU_TSAN 1
#endif
#endif

static int child_work(void)
{
    CUstream s;
    CUcontext ctx;
    /* the parent's context is not valid here until cuInit + retain */
    OK(cuInit(0));
    ctx = test_setup();
    (void)ctx;
    OK(cuStreamCreate(&s, 0));
    uint32_t *flag;
    OK(cuMemHostAlloc((void **)&flag, 64, 0));
    *flag = 0;
    CUdeviceptr d;
    OK(cuMemHostGetDevicePointer(&d, flag, 0));
    OK(emuLaunchKernel(s, 1000000, NULL, NULL));
    OK(cuStreamWriteValue32(s, d, 5, 0));
    OK(cuStreamWaitValue32(s, d, 5, CU_STREAM_WAIT_VALUE_GEQ));
    OK(cuStreamSynchronize(s));
    CHECK(*flag == 5);
    OK(cuStreamDestroy(s));
    OK(cuMemFreeHost(flag));
    return 0;
}

static void run_child(void)
{
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0)
        _exit(child_work());
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(void)
{
    /* fork before the parent uses the driver (the framework emulator's way) */
    run_child();
    run_child();

#ifdef EMU_TSAN
    printf("PASS (multi-threaded fork skipped under TSan)\n");
    return 0;
#endif
    /* parent with live streams, then fork */
    test_setup();
    CUstream s;
    OK(cuStreamCreate(&s, 0));
    OK(emuLaunchKernel(s, 1000000ull, NULL, NULL));
    /* Let the stream thread go idle first: a thread inside malloc at fork time would leave the
     * (sanitizer) allocator locked in the child. */
    OK(cuStreamSynchronize(s));
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        /* state was reset: the inherited handles are gone, cuInit is needed again */
        if (cuStreamQuery(s) != CUDA_ERROR_NOT_INITIALIZED)
            _exit(3);
        _exit(child_work());
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    OK(emuLaunchKernel(s, 1000000ull, NULL, NULL)); /* the parent's stream still works */
    OK(cuStreamSynchronize(s));
    OK(cuStreamDestroy(s));
    printf("PASS\n");
    return 0;
}
