/* fault injection (EMU_FAULT): only the n-th call of the named entry point fails, with the chosen
 * code, only in the process whose EMU_RANK matches; a forked child counts from zero; a malformed
 * item is ignored. */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "emu_test.h"

static void event_calls(CUresult second)
{
    CUevent e[3];
    OK(cuEventCreate(&e[0], 0));
    CHECK_CU(cuEventCreate(&e[1], 0), second);
    OK(cuEventCreate(&e[2], 0));
    OK(cuEventDestroy(e[0]));
    OK(cuEventDestroy(e[2]));
    if (second == CUDA_SUCCESS)
        OK(cuEventDestroy(e[1]));
}

int main(void)
{
    CUstream s;
    int st;
    pid_t pid;

    setenv("EMU_FAULT", "bogus,cuEventCreate:2:rank=1:rc=700,cuStreamCreate:1", 1);
    OK(cuInit(0));
    test_setup();
    /* EMU_RANK 0: the rank=1 item does not apply */
    setenv("EMU_RANK", "0", 1);
    event_calls(CUDA_SUCCESS);
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) { /* a fresh count in the child, as rank 1 */
        setenv("EMU_RANK", "1", 1);
        OK(cuInit(0)); /* the parent's context is not valid in the child */
        test_setup();
        event_calls(CUDA_ERROR_ILLEGAL_ADDRESS);
        event_calls(CUDA_SUCCESS); /* the 5th call: only the 2nd fails */
        _exit(0);
    }
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    /* after the fork (no stream threads before it, for TSan): no rank=, every process; the
     * first cuStreamCreate fails with the default code */
    CHECK_CU(cuStreamCreate(&s, 0), CUDA_ERROR_UNKNOWN);
    OK(cuStreamCreate(&s, 0));
    OK(cuStreamDestroy(s));
    printf("fault: EMU_FAULT items applied to the n-th call, rank and code\n");
    return 0;
}
