/* Graphs built node by node and launched: event record nodes, event wait nodes and host nodes
 * (cuGraphCreate, cuGraphAddEventRecordNode, cuGraphAddEventWaitNode, cuGraphAddHostNode,
 * cuGraphAddNode for those three types, cuGraph(Exec)Event{Record,Wait}NodeSetEvent,
 * cuGraphInstantiate, cuGraphLaunch, cuGraphExecDestroy). The nodes run in the order they were
 * added (the dependency arguments are accepted, not used: a chain is what the tests build). At
 * launch, on the stream: a record node records its event, a wait node waits for its event's latest
 * record as it is at the launch, a host node runs its function. Graphs made by capture cannot be
 * instantiated (CUDA_ERROR_NOT_SUPPORTED). */
#include <stdlib.h>

#include "emu_internal.h"

enum emu_gnode_kind { EMU_GNODE_RECORD = 1, EMU_GNODE_WAIT, EMU_GNODE_HOST };

struct emu_gnode {
    struct emu_gnode *next;
    enum emu_gnode_kind kind;
    CUevent event;
    CUhostFn fn;
    void *arg;
    struct emu_gnode *orig; /* in an executable graph: the node it was instantiated from */
};

struct CUgraphExec_st {
    struct emu_gnode *nodes;
};

static struct emu_ptrset emu_execs; /* under emu_g.lock */

static int emu_graph_live(CUgraph g)
{
    pthread_mutex_lock(&emu_g.lock);
    int ok = g && emu_ptrset_has(&emu_g.graphs, g);
    pthread_mutex_unlock(&emu_g.lock);
    return ok;
}

static int emu_exec_live(CUgraphExec x)
{
    pthread_mutex_lock(&emu_g.lock);
    int ok = x && emu_ptrset_has(&emu_execs, x);
    pthread_mutex_unlock(&emu_g.lock);
    return ok;
}

CUresult cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
    CUresult rc = emu_check_init();
    if (rc)
        return rc;
    if (!phGraph || flags)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUgraph_st *g = emu_graph_new(0);
    if (!g)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&emu_g.lock);
    int err = emu_ptrset_add(&emu_g.graphs, g);
    pthread_mutex_unlock(&emu_g.lock);
    if (err) {
        emu_graph_free(g);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *phGraph = g;
    return CUDA_SUCCESS;
}

static CUresult emu_graph_add(CUgraphNode *out, CUgraph g, enum emu_gnode_kind kind, CUevent e,
                              CUhostFn fn, void *arg)
{
    CUresult rc = emu_check_init();
    if (rc)
        return rc;
    if (!out || !emu_graph_live(g) || (kind != EMU_GNODE_HOST && !e) ||
        (kind == EMU_GNODE_HOST && !fn))
        return CUDA_ERROR_INVALID_VALUE;
    struct emu_gnode *n = calloc(1, sizeof(*n));
    if (!n)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *n = (struct emu_gnode){.kind = kind, .event = e, .fn = fn, .arg = arg};
    pthread_mutex_lock(&emu_g.lock);
    if (g->last)
        g->last->next = n;
    else
        g->nodes = n;
    g->last = n;
    pthread_mutex_unlock(&emu_g.lock);
    *out = (CUgraphNode)n;
    return CUDA_SUCCESS;
}

CUresult cuGraphAddEventRecordNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                   const CUgraphNode *dependencies, size_t numDependencies,
                                   CUevent event)
{
    (void)dependencies, (void)numDependencies;
    return emu_graph_add(phGraphNode, hGraph, EMU_GNODE_RECORD, event, NULL, NULL);
}

CUresult cuGraphAddEventWaitNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                 const CUgraphNode *dependencies, size_t numDependencies,
                                 CUevent event)
{
    (void)dependencies, (void)numDependencies;
    return emu_graph_add(phGraphNode, hGraph, EMU_GNODE_WAIT, event, NULL, NULL);
}

CUresult cuGraphAddHostNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                            const CUgraphNode *dependencies, size_t numDependencies,
                            const CUDA_HOST_NODE_PARAMS *nodeParams)
{
    (void)dependencies, (void)numDependencies;
    if (!nodeParams)
        return CUDA_ERROR_INVALID_VALUE;
    return emu_graph_add(phGraphNode, hGraph, EMU_GNODE_HOST, NULL, nodeParams->fn,
                         nodeParams->userData);
}

CUresult cuGraphAddNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph,
                           const CUgraphNode *dependencies, const CUgraphEdgeData *dependencyData,
                           size_t numDependencies, CUgraphNodeParams *nodeParams)
{
    (void)dependencies, (void)dependencyData, (void)numDependencies;
    if (!nodeParams)
        return CUDA_ERROR_INVALID_VALUE;
    switch (nodeParams->type) {
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
        return emu_graph_add(phGraphNode, hGraph, EMU_GNODE_RECORD, nodeParams->eventRecord.event,
                             NULL, NULL);
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
        return emu_graph_add(phGraphNode, hGraph, EMU_GNODE_WAIT, nodeParams->eventWait.event, NULL,
                             NULL);
    case CU_GRAPH_NODE_TYPE_HOST:
        return emu_graph_add(phGraphNode, hGraph, EMU_GNODE_HOST, NULL, nodeParams->host.fn,
                             nodeParams->host.userData);
    default:
        return CUDA_ERROR_NOT_SUPPORTED;
    }
}

static CUresult emu_node_set_event(struct emu_gnode *n, enum emu_gnode_kind kind, CUevent e)
{
    CUresult rc = emu_check_init();
    if (rc)
        return rc;
    if (!n || n->kind != kind || !e)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&emu_g.lock);
    n->event = e;
    pthread_mutex_unlock(&emu_g.lock);
    return CUDA_SUCCESS;
}

CUresult cuGraphEventRecordNodeSetEvent(CUgraphNode hNode, CUevent event)
{
    return emu_node_set_event((struct emu_gnode *)hNode, EMU_GNODE_RECORD, event);
}

CUresult cuGraphEventWaitNodeSetEvent(CUgraphNode hNode, CUevent event)
{
    return emu_node_set_event((struct emu_gnode *)hNode, EMU_GNODE_WAIT, event);
}

static CUresult emu_exec_set_event(CUgraphExec x, CUgraphNode node, enum emu_gnode_kind kind,
                                   CUevent e)
{
    if (!emu_exec_live(x))
        return CUDA_ERROR_INVALID_VALUE;
    for (struct emu_gnode *n = x->nodes; n; n = n->next)
        if (n->orig == (struct emu_gnode *)node)
            return emu_node_set_event(n, kind, e);
    return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGraphExecEventRecordNodeSetEvent(CUgraphExec hGraphExec, CUgraphNode hNode,
                                            CUevent event)
{
    return emu_exec_set_event(hGraphExec, hNode, EMU_GNODE_RECORD, event);
}

CUresult cuGraphExecEventWaitNodeSetEvent(CUgraphExec hGraphExec, CUgraphNode hNode, CUevent event)
{
    return emu_exec_set_event(hGraphExec, hNode, EMU_GNODE_WAIT, event);
}

static void emu_nodes_free(struct emu_gnode *n)
{
    while (n) {
        struct emu_gnode *next = n->next;
        free(n);
        n = next;
    }
}

CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
                                     unsigned long long flags)
{
    struct emu_gnode *head = NULL, **tail = &head;
    CUresult rc = emu_check_init();

    (void)flags;
    if (rc)
        return rc;
    if (!phGraphExec || !emu_graph_live(hGraph))
        return CUDA_ERROR_INVALID_VALUE;
    if (hGraph->head)
        return CUDA_ERROR_NOT_SUPPORTED; /* a captured graph */
    struct CUgraphExec_st *x = calloc(1, sizeof(*x));
    if (!x)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&emu_g.lock);
    for (struct emu_gnode *n = hGraph->nodes; n && !rc; n = n->next) {
        struct emu_gnode *c = malloc(sizeof(*c));
        if (!c) {
            rc = CUDA_ERROR_OUT_OF_MEMORY;
            break;
        }
        *c = *n;
        c->next = NULL;
        c->orig = n;
        *tail = c;
        tail = &c->next;
    }
    if (!rc && emu_ptrset_add(&emu_execs, x))
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_unlock(&emu_g.lock);
    if (rc) {
        emu_nodes_free(head);
        free(x);
        return rc;
    }
    x->nodes = head;
    *phGraphExec = x;
    return CUDA_SUCCESS;
}

CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
    CUresult rc = emu_check_init();

    if (rc)
        return rc;
    if (!emu_exec_live(hGraphExec))
        return CUDA_ERROR_INVALID_VALUE;
    for (struct emu_gnode *n = hGraphExec->nodes; n && !rc; n = n->next) {
        if (n->kind == EMU_GNODE_RECORD)
            rc = cuEventRecord(n->event, hStream);
        else if (n->kind == EMU_GNODE_WAIT)
            rc = cuStreamWaitEvent(hStream, n->event, 0);
        else
            rc = cuLaunchHostFunc(hStream, n->fn, n->arg);
    }
    return rc;
}

CUresult cuGraphExecDestroy(CUgraphExec hGraphExec)
{
    CUresult rc = emu_check_init();

    if (rc)
        return rc;
    pthread_mutex_lock(&emu_g.lock);
    int err = !hGraphExec || emu_ptrset_del(&emu_execs, hGraphExec);
    pthread_mutex_unlock(&emu_g.lock);
    if (err)
        return CUDA_ERROR_INVALID_VALUE;
    emu_nodes_free(hGraphExec->nodes);
    free(hGraphExec);
    return CUDA_SUCCESS;
}
