/* The exit check's fixtures (test/adopt/exit_check.sh): a process that loads NCCL one way, and
 * makes one all-reduce or none.
 *   exit_fixture MODE   loads libfixture_nccl_user.so (links libnccl.so.2) with dlopen():
 *     deepbind    RTLD_DEEPBIND, then calls it: its NCCL calls bind past the preload
 *     local       RTLD_LOCAL, then calls it: intercepted (PyTorch's way)
 *     unused      RTLD_LAZY | RTLD_LOCAL, never called (a process that imports torch only)
 *     unused-now  RTLD_NOW | RTLD_LOCAL, never called
 *   exit_fixture_exported   NCCL linked statically into the executable and exported
 *                           (-rdynamic): the calls bind inside it
 * Exit status 0 when the all-reduce (if any) worked. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <nccl.h>
#include <stdio.h>
#include <string.h>

#ifdef EXIT_FIXTURE_EXPORTED
int main(void)
{
    int v = 0;
    if (ncclGetVersion(&v) != ncclSuccess ||
        ncclAllReduce(0, 0, 0, ncclFloat32, ncclSum, 0, 0) != ncclSuccess)
        return 1;
    printf("fixture: NCCL %d linked in, 1 all-reduce done\n", v);
    return 0;
}
#else
int main(int argc, char **argv)
{
    static const struct {
        const char *mode;
        int flags, call;
    } modes[] = {{"deepbind", RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND, 1},
                 {"local", RTLD_NOW | RTLD_LOCAL, 1},
                 {"unused", RTLD_LAZY | RTLD_LOCAL, 0},
                 {"unused-now", RTLD_NOW | RTLD_LOCAL, 0}};
    for (size_t i = 0; argc > 1 && i < sizeof(modes) / sizeof(modes[0]); i++) {
        if (strcmp(argv[1], modes[i].mode) != 0)
            continue;
        void *h = dlopen("libfixture_nccl_user.so", modes[i].flags);
        int (*step)(void) = h ? (int (*)(void))dlsym(h, "fixture_nccl_user_step") : NULL;
        if (!step) {
            fprintf(stderr, "exit_fixture: %s\n", dlerror());
            return 1;
        }
        if (modes[i].call && step() != 0)
            return 1;
        printf("fixture: %s, %d all-reduce done\n", modes[i].mode, modes[i].call);
        return 0;
    }
    fprintf(stderr, "usage: exit_fixture deepbind|local|unused|unused-now\n");
    return 2;
}
#endif
