/* Linked against the REAL libnccl.so.2 (no GPU here): prints what ncclGetVersion and
 * ncclCommInitRank return, so that a run with libprophet.so preloaded can be compared with one
 * without (errors of the real NCCL must reach the caller unchanged). Exits 1 if ncclGetVersion or
 * ncclGetUniqueId fails, or the version is not a 2.x one, or a communicator that did initialise
 * (on a machine with a GPU) cannot be destroyed. */
#include <nccl.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
    int version = 0;
    ncclResult_t v = ncclGetVersion(&version);
    ncclUniqueId id;
    ncclComm_t comm = NULL;
    ncclResult_t u, r;

    memset(&id, 0, sizeof(id));
    u = ncclGetUniqueId(&id);
    r = ncclCommInitRank(&comm, 1, id, 0);
    printf("ncclGetVersion=%d version=%d\n", (int)v, version);
    printf("ncclGetUniqueId=%d\n", (int)u);
    printf("ncclCommInitRank=%d\n", (int)r);
    if (v != ncclSuccess || u != ncclSuccess || version < 20000 || version >= 30000)
        return 1;
    if (r == ncclSuccess && ncclCommDestroy(comm) != ncclSuccess)
        return 1;
    return 0;
}
