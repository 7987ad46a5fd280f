/* Graphs made by stream capture: the list of captured operations. Graphs cannot be launched. */
#include <stdlib.h>

#include "emu_internal.h"

struct CUgraph_st *emu_graph_new(unsigned long long capture_id)
{
    struct CUgraph_st *g = calloc(1, sizeof(*g));
    if (g)
        g->capture_id = capture_id;
    return g;
}

void emu_graph_free(struct CUgraph_st *g)
{
    while (g->nodes) { /* nodes of a built graph (emu_graph_exec.c): the first field is next */
        void *n = g->nodes;
        g->nodes = *(struct emu_gnode **)n;
        free(n);
    }
    while (g->head) {
        struct emu_op *op = g->head;
        g->head = op->next;
        emu_op_free(op);
    }
    free(g);
}

CUresult cuGraphDestroy(CUgraph hGraph)
{
    CUresult rc = emu_check_init();
    if (rc)
        return rc;
    pthread_mutex_lock(&emu_g.lock);
    int err = !hGraph || emu_ptrset_del(&emu_g.graphs, hGraph);
    pthread_mutex_unlock(&emu_g.lock);
    if (err)
        return CUDA_ERROR_INVALID_VALUE;
    emu_graph_free(hGraph);
    return CUDA_SUCCESS;
}

CUresult emuGraphNumOps(CUgraph hGraph, size_t *n)
{
    CUresult rc = emu_check_init();
    if (rc)
        return rc;
    if (!n)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&emu_g.lock);
    int ok = hGraph && emu_ptrset_has(&emu_g.graphs, hGraph);
    if (ok)
        *n = hGraph->nops;
    pthread_mutex_unlock(&emu_g.lock);
    return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
