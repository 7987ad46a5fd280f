/* A framework library with NCCL linked statically into it (as conda builds of PyTorch have it):
 * fixture_nccl_static.a's ncclAllReduce is hidden inside libfixture_framework.so. */
#include <nccl.h>

__attribute__((visibility("default"))) int fixture_framework_step(void)
{
    int v = 0;
    if (ncclGetVersion(&v) != ncclSuccess)
        return 1;
    return ncclAllReduce(0, 0, 0, ncclFloat32, ncclSum, 0, 0) == ncclSuccess ? 0 : 1;
}
