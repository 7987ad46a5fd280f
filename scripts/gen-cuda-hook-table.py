#!/usr/bin/env python3
"""Writes cuda_hook_table.h: the CUDA driver entry points that libprophet.so wraps, one X-macro
line each, with the exact prototype taken from the toolkit's cuda.h. The build runs it on the cuda.h
it builds against (preload/CMakeLists.txt):
    scripts/gen-cuda-hook-table.py CUDA_H [OUT]     the table (stdout without OUT)
    scripts/gen-cuda-hook-table.py --check CUDA_H   only the coverage check below
    scripts/gen-cuda-hook-table.py --doc            the handling table of docs/completion-holding.md
Every symbol the header maps a wrapped name to is listed: the name itself, its versioned forms
(_v2, _v3), the per-thread default stream forms (_ptsz, _ptds, declared under
CUDA_API_PER_THREAD_DEFAULT_STREAM) and the legacy forms that cuda.h declares for old binaries
(under __CUDA_API_VERSION_INTERNAL; their 32-bit CUdeviceptr_v1 and *_v1 structures are spelled
with ABI-equal types, since a wrapper only forwards them).

Coverage: every entry point that cuda.h declares with a parameter that names a stream, an event, an
executable graph, a graph node's parameters (which may be an event record or wait node) or a launch
configuration (TRIGGER) must be wrapped (KINDS), reviewed harmless (HARMLESS, with why) or a known
gap (GAPS, with why). Any other such declaration fails the generation, naming it: a new entry point
in a future cuda.h cannot be missed silently."""
import re
import sys

# name asked for by cuGetProcAddress -> kind (docs/design.md, "Interception of the CUDA driver")
KINDS = {
    "cuEventRecord": "RECORD", "cuEventRecordWithFlags": "RECORD",
    "cuStreamWaitEvent": "WAIT",
    "cuEventQuery": "EVENT_QUERY", "cuStreamQuery": "STREAM_QUERY",
    "cuEventSynchronize": "EVENT_SYNC", "cuStreamSynchronize": "STREAM_SYNC",
    "cuCtxSynchronize": "CTX_SYNC", "cuMemFree": "MEM_FREE", "cuMemFreeHost": "MEM_FREE",
    "cuEventElapsedTime": "ELAPSED",
    "cuEventDestroy": "EVENT_DESTROY", "cuStreamDestroy": "STREAM_DESTROY",
    "cuStreamCreate": "STREAM_CREATE", "cuStreamCreateWithPriority": "STREAM_CREATE",
    "cuStreamBeginCapture": "CAPTURE_BEGIN", "cuStreamBeginCaptureToGraph": "CAPTURE_BEGIN",
    "cuStreamEndCapture": "OTHER",
    "cuEventCreate": "EVENT_CREATE", "cuIpcOpenEventHandle": "IPC_OPEN_EVENT",
    "cuIpcGetEventHandle": "IPC_GET_EVENT",
    # issue 37, item 3
    "cuCtxRecordEvent": "CTX_RECORD", "cuGreenCtxRecordEvent": "CTX_RECORD",
    "cuCtxWaitEvent": "CTX_WAIT", "cuGreenCtxWaitEvent": "CTX_WAIT",
    "cuGraphAddEventRecordNode": "GRAPH_EVENT", "cuGraphAddEventWaitNode": "GRAPH_EVENT",
    "cuGraphEventRecordNodeSetEvent": "GRAPH_EVENT", "cuGraphEventWaitNodeSetEvent": "GRAPH_EVENT",
    "cuGraphExecEventRecordNodeSetEvent": "GRAPH_EVENT",
    "cuGraphExecEventWaitNodeSetEvent": "GRAPH_EVENT",
    "cuGraphAddNode": "GRAPH_NODE", "cuGraphNodeSetParams": "GRAPH_NODE",
    "cuGraphExecNodeSetParams": "GRAPH_NODE",
    "cuGraphLaunch": "GRAPH_LAUNCH", "cuLaunchKernelEx": "LAUNCH_EX",
    "cuLaunchCooperativeKernelMultiDevice": "MULTI_WORK",
}
WORK = """cuLaunchKernel cuLaunchCooperativeKernel cuLaunchHostFunc
cuStreamAddCallback cuMemcpyAsync cuMemcpyHtoDAsync cuMemcpyDtoHAsync
cuMemcpyDtoDAsync cuMemcpyHtoAAsync cuMemcpyAtoHAsync cuMemcpy2DAsync cuMemcpy3DAsync
cuMemcpyPeerAsync cuMemcpy3DPeerAsync cuMemcpyBatchAsync cuMemcpy3DBatchAsync cuMemsetD8Async
cuMemsetD16Async cuMemsetD32Async cuMemsetD2D8Async cuMemsetD2D16Async cuMemsetD2D32Async
cuStreamWaitValue32 cuStreamWaitValue64 cuStreamWriteValue32 cuStreamWriteValue64
cuStreamBatchMemOp cuMemAllocAsync cuMemFreeAsync cuMemAllocFromPoolAsync
cuSignalExternalSemaphoresAsync cuWaitExternalSemaphoresAsync
cuMemDiscardBatchAsync cuMemDiscardAndPrefetchBatchAsync cuMemBatchDecompressAsync
cuLaunchGridAsync cuLaunch cuLaunchGrid cuMemMapArrayAsync cuStreamAttachMemAsync
cuGraphicsMapResources cuGraphicsUnmapResources"""
# WORK on the default stream (no stream parameter): the deprecated launches
DEFAULT_STREAM_WORK = {"cuLaunch", "cuLaunchGrid"}
SYNC_WORK = """cuMemcpy cuMemcpyHtoD cuMemcpyDtoH cuMemcpyDtoD cuMemcpyDtoA cuMemcpyAtoD
cuMemcpyHtoA cuMemcpyAtoH cuMemcpyAtoA cuMemcpy2D cuMemcpy2DUnaligned cuMemcpy3D cuMemcpyPeer
cuMemcpy3DPeer cuMemsetD8 cuMemsetD16 cuMemsetD32 cuMemsetD2D8 cuMemsetD2D16 cuMemsetD2D32"""
for n in WORK.split():
    KINDS[n] = "WORK"
for n in SYNC_WORK.split():
    KINDS[n] = "SYNC_WORK"
KINDS["cuGetProcAddress"] = "PROCADDR"

# Parameter types that make a declaration need a decision: it may order work, record or wait on an
# event, launch, or carry an event record/wait node.
TRIGGER = re.compile(r"\b(CUstream|CUevent|CUgraphExec|CUgraphNodeParams|CUDA_EVENT_RECORD_NODE_PARAMS"
                     r"|CUDA_EVENT_WAIT_NODE_PARAMS|CUlaunchConfig|CUDA_LAUNCH_PARAMS)\b")

# Reviewed: harmless. Not wrapped, and need not be: they neither enqueue work that reads or writes
# memory a held all-reduce produces, nor record or wait on an event, nor synchronise the host.
HARMLESS = {
    # queries of a stream: nothing runs, nothing is ordered
    "cuStreamGetCtx": "returns the stream's context",
    "cuStreamGetDevice": "returns the stream's device",
    "cuStreamGetFlags": "returns the stream's flags (the engine itself asks it, H11)",
    "cuStreamGetPriority": "returns the stream's priority",
    "cuStreamGetId": "returns the stream's id",
    "cuStreamGetGreenCtx": "returns the stream's green context",
    "cuStreamGetAttribute": "reads a stream attribute",
    "cuStreamSetAttribute": "sets a scheduling attribute (priority, access policy, sync policy); "
                            "no work, no ordering",
    "cuStreamCopyAttributes": "copies scheduling attributes between streams; no work, no ordering",
    "cuStreamIsCapturing": "returns the capture status",
    "cuStreamGetCaptureInfo": "returns the capture status and graph",
    "cuStreamUpdateCaptureDependencies": "valid only during a capture, and a capturing stream is "
                                         "never held (H10)",
    "cuGreenCtxStreamCreate": "creates a stream; the engine learns the flags of a stream it was "
                              "not told of from cuStreamGetFlags (H11)",
    # occupancy queries with a launch configuration: nothing is launched
    "cuOccupancyMaxActiveClusters": "occupancy query; launches nothing",
    "cuOccupancyMaxPotentialClusterSize": "occupancy query; launches nothing",
    # executable graphs: built, updated, destroyed; only cuGraphLaunch (wrapped) runs them
    "cuGraphInstantiate": "builds an executable graph; runs nothing",
    "cuGraphInstantiateWithParams": "builds an executable graph; its optional upload stream gets "
                                    "only the graph's upload, which touches no user memory",
    "cuGraphUpload": "uploads a graph's resources on a stream; touches no user memory",
    "cuGraphExecDestroy": "destroys an executable graph; runs nothing",
    "cuGraphExecGetFlags": "returns the graph's flags",
    "cuGraphExecUpdate": "changes what a later cuGraphLaunch (wrapped) runs; runs nothing",
    "cuGraphExecKernelNodeSetParams": "changes a node of an executable graph; runs nothing",
    "cuGraphExecMemcpyNodeSetParams": "changes a node of an executable graph; runs nothing",
    "cuGraphExecMemsetNodeSetParams": "changes a node of an executable graph; runs nothing",
    "cuGraphExecHostNodeSetParams": "changes a node of an executable graph; runs nothing",
    "cuGraphExecChildGraphNodeSetParams": "changes a node of an executable graph; runs nothing",
    "cuGraphExecBatchMemOpNodeSetParams": "changes a node of an executable graph; runs nothing",
    "cuGraphExecExternalSemaphoresSignalNodeSetParams": "changes a node of an executable graph; "
                                                        "runs nothing",
    "cuGraphExecExternalSemaphoresWaitNodeSetParams": "changes a node of an executable graph; "
                                                      "runs nothing",
    "cuGraphNodeGetEnabled": "reads whether a node of an executable graph is enabled",
    "cuGraphNodeSetEnabled": "enables a node of an executable graph; runs nothing",
    "cuGraphEventRecordNodeGetEvent": "returns a node's event",
    "cuGraphEventWaitNodeGetEvent": "returns a node's event",
    # unified memory placement: moves pages, never their contents' meaning
    "cuMemPrefetchAsync": "migrates managed pages on a stream; reads and writes no contents, the "
                          "driver keeps them coherent with a later write",
    "cuMemPrefetchBatchAsync": "migrates managed pages on a stream; reads and writes no contents",
    # interprocess memory: a handle orders nothing; the other process's reads are ordered by an
    # interprocess event, whose records are never virtual (cuEventCreate, cuIpc*EventHandle)
    "cuIpcGetMemHandle": "exports an allocation; orders nothing (the importer's reads wait on an "
                         "interprocess event, never recorded virtually)",
    "cuIpcOpenMemHandle": "maps another process's allocation; orders nothing",
    "cuIpcCloseMemHandle": "unmaps another process's allocation; orders nothing",
}

# Known gaps: refused or not yet wrapped (docs/completion-holding.md). Each is a way for a consumer
# to see a held all-reduce's buffer before its block has run, or a stale event (issue 37).
GAPS = {
}

# Wrapped, with a part the wrapper does not yet see (known gaps too).
WRAPPED_GAPS = {}

# legacy types only the internal part of cuda.h defines: ABI-equal spellings
LEGACY_TYPES = [
    (r"\bCUdeviceptr_v1\b", "unsigned int"),
    (r"\bconst CUDA_MEMCPY2D_v1 \*", "const void *"),
    (r"\bconst CUDA_MEMCPY3D_v1 \*", "const void *"),
]


def proc_name(sym):
    s = re.sub(r"_pt[sd][sz]$", "", sym)
    s = re.sub(r"_v[0-9]$", "", s)
    return s


def uncovered(text):
    """(name, types) of each declaration that takes a TRIGGER type and is on none of the lists."""
    decl = re.compile(r"CUresult CUDAAPI (cu\w+)\s*\(([^;]*?)\)\s*;", re.S)
    missing = {}
    for m in decl.finditer(text):
        types = TRIGGER.findall(m.group(2))
        name = proc_name(m.group(1))
        if types and not any(name in d for d in (KINDS, HARMLESS, GAPS)):
            missing.setdefault(m.group(1), sorted(set(types)))
    return sorted(missing.items())


def check(text, path):
    missing = uncovered(text)
    for name, types in missing:
        print(f"{path}: {name} takes {', '.join(types)} and is neither wrapped nor reviewed: add it "
              "to KINDS, HARMLESS or GAPS in scripts/gen-cuda-hook-table.py", file=sys.stderr)
    return 1 if missing else 0


def param_types(params):
    """The parameter types of a prototype, with cuda.h's versioned type aliases (CUdeviceptr_v2,
    CUDA_MEMCPY2D_v2) spelled as their plain names: what two prototypes of one ABI share."""
    types = []
    for p in params.split(","):
        ws = re.findall(r"[\w*]+", p.replace("*", " * "))
        if ws and ws != ["void"]:
            types.append(re.sub(r"\b(CU\w+?)_v\d+\b", r"\1", " ".join(ws[:-1])))
    return types


def abi_versions(path):
    """cudaTypedefs.h beside cuda.h: (name, flavour "", "_ptsz" or "_ptds") -> [(version, types)]
    (PFN_<name>_v<version>: from that CUDA version cuGetProcAddress answers with that ABI)."""
    import os
    abis = {}
    try:
        text = open(os.path.join(os.path.dirname(path), "cudaTypedefs.h")).read()
    except OSError:
        return abis
    pfn = re.compile(r"typedef CUresult \(CUDAAPI \*PFN_(cu\w+?)_v(\d+)(_pt[sd][sz])?\)\s*\(([^;]*?)\);",
                     re.S)
    for m in pfn.finditer(text):
        abis.setdefault((m.group(1), m.group(3) or ""), []).append(
            (int(m.group(2)), param_types(m.group(4))))
    return abis


def abi_range(abis, proc, flavour, params, header_version):
    """The requested versions that get this prototype's ABI: (first, last), or (0, 0) unknown."""
    known = sorted(abis.get((proc, flavour)) or abis.get((proc, ""), []))
    mine = [v for v, t in known if t == param_types(params) and v <= header_version]
    if not mine:
        return 0, 0
    first = max(mine)
    later = [v for v, _ in known if v > first]
    return first, (min(later) - 1 if later else header_version)


KIND_DOC = {
    "RECORD": "RECORD: becomes virtual on a stream that is behind (H2); with "
              "CU_EVENT_RECORD_EXTERNAL the stream is materialised and the driver records with "
              "the flag",
    "WAIT": "WAIT: takes a virtual event's dependencies (H3); with CU_EVENT_WAIT_EXTERNAL the "
            "record is made real first and the driver waits with the flag",
    "WORK": "WORK: real work materialises the stream first (H4)",
    "SYNC_WORK": "SYNC_WORK: work on the default stream, then a host wait (H4, H6)",
    "EVENT_QUERY": "EVENT_QUERY: NOT_READY on a virtual record (H5)",
    "STREAM_QUERY": "STREAM_QUERY: NOT_READY on a stream that is behind (H5)",
    "ELAPSED": "ELAPSED: NOT_READY on a virtual record (H5)",
    "EVENT_SYNC": "EVENT_SYNC: releases what the event is behind (H6)",
    "STREAM_SYNC": "STREAM_SYNC: releases what the stream is behind (H6)",
    "CTX_SYNC": "CTX_SYNC: releases only the blocks that gated work waits for (H6)",
    "MEM_FREE": "MEM_FREE: releases only a block with a member's buffer in the freed allocation, "
                "or one that gated work waits for (H6)",
    "EVENT_DESTROY": "EVENT_DESTROY: a virtual record's destruction is deferred (H8); an "
                     "interprocess or graph event is forgotten first",
    "STREAM_DESTROY": "STREAM_DESTROY: releases what the stream is behind (H6)",
    "STREAM_CREATE": "STREAM_CREATE: the stream's flags are told (H11)",
    "CAPTURE_BEGIN": "CAPTURE_BEGIN: materialises first; nothing held in capture (H10)",
    "OTHER": "OTHER: forwarded",
    "EVENT_CREATE": "EVENT_CREATE: an event made with CU_EVENT_INTERPROCESS is told: its records "
                    "are never virtual (interprocess events)",
    "IPC_OPEN_EVENT": "IPC_OPEN_EVENT: the opened event is told: its records in this process are "
                      "never virtual (interprocess events)",
    "IPC_GET_EVENT": "IPC_GET_EVENT: a virtual last record is made real first, the event is told "
                     "(interprocess events)",
    "PROCADDR": "PROCADDR: answers are swapped for wrappers (version-checked)",
    "CTX_RECORD": "CTX_RECORD: every open block is released and waited for on the host, then the "
                  "driver records (the record covers the held all-reduces)",
    "CTX_WAIT": "CTX_WAIT: the event's record is made real first (its blocks released), then the "
                "driver's context-wide wait",
    "GRAPH_EVENT": "GRAPH_EVENT: the event joins the graph events; a graph launch makes their "
                   "virtual records real first",
    "GRAPH_NODE": "GRAPH_NODE: an event record or wait node's event joins the graph events "
                  "(as GRAPH_EVENT)",
    "GRAPH_LAUNCH": "GRAPH_LAUNCH: virtual records of graph events made real, then WORK (H4)",
    "LAUNCH_EX": "LAUNCH_EX: WORK (H4); its PROGRAMMATIC_EVENT and LAUNCH_COMPLETION_EVENT "
                 "attributes are real records after the launch",
    "MULTI_WORK": "MULTI_WORK: WORK (H4) on every launch's stream",
}


def doc():
    """The handling table of docs/completion-holding.md, from the lists alone."""
    out = ["| Entry point | Handling | Why / what the wrapper asks |", "|---|---|---|"]
    rows = [(n, "wrapped", KIND_DOC[k] + ("; known gap: " + WRAPPED_GAPS[n]
                                          if n in WRAPPED_GAPS else ""))
            for n, k in KINDS.items()]
    rows += [(n, "reviewed harmless", r) for n, r in HARMLESS.items()]
    rows += [(n, "known gap", r) for n, r in GAPS.items()]
    for n, h, r in sorted(rows, key=lambda r: ({"wrapped": 0, "reviewed harmless": 1}.get(r[1], 2),
                                               r[0])):
        out.append(f"| `{n}` | {h} | {r} |")
    return "\n".join(out)


def main():
    argv = sys.argv[1:]
    if argv[:1] == ["--doc"]:
        print(doc())
        return 0
    only_check = argv[:1] == ["--check"]
    if only_check:
        argv = argv[1:]
    path = argv[0] if argv else "/usr/local/cuda/include/cuda.h"
    text = open(path).read()
    if check(text, path):
        return 1
    if only_check:
        return 0
    lines = text.split("\n")
    # macro renames: normal build and CUDA_API_PER_THREAD_DEFAULT_STREAM build
    normal, ptds = {}, {}
    in_ptds_only = False
    for ln in lines[:400]:
        s = ln.strip()
        if s.startswith("#if defined(__CUDA_API_PER_THREAD_DEFAULT_STREAM)"):
            in_ptds_only = True
        elif s.startswith("#endif"):
            in_ptds_only = False
        m = re.match(r"#define (cu\w+)\s+(__CUDA_API_PT(DS|SZ)\((\w+)\)|(cu\w+))\s*$", s)
        if not m:
            continue
        name = m.group(1)
        if m.group(4):
            target, suffix = m.group(4), "_pt" + m.group(3).lower()
            if not in_ptds_only:
                normal[name] = target
            ptds[name] = target + suffix
        else:
            normal[name] = ptds[name] = m.group(5)
    # prototypes: (symbol -> params), outside and inside the internal block
    decl = re.compile(r"CUresult CUDAAPI (cu\w+)\s*\(([^;]*?)\)\s*;", re.S)
    internal_start = text.index("#if defined(__CUDA_API_VERSION_INTERNAL)\n    #undef")
    internal_end = text.index("#elif defined(__CUDA_API_PER_THREAD_DEFAULT_STREAM)", internal_start)
    protos = {}  # symbol -> (params, origin)
    raw_of = {}  # symbol -> the name as declared in the public part (what callers ask for)

    def add(sym, params, origin, raw=None):
        if raw and sym not in raw_of:
            raw_of[sym] = raw
        params = " ".join(params.split())
        if origin == "internal":
            for pat, rep in LEGACY_TYPES:
                params = re.sub(pat, rep, params)
        old = protos.get(sym)
        if old and old[0] != params:
            if old[1] != "internal" and origin == "internal":
                return  # the public declaration wins (same ABI)
            sys.exit(f"conflicting prototypes for {sym}: {old[0]} / {params}")
        if not old:
            protos[sym] = (params, origin)

    for m in decl.finditer(text):
        raw, params = m.group(1), m.group(2)
        if internal_start <= m.start() < internal_end:
            add(raw, params, "internal")
        else:
            add(normal.get(raw, raw), params, "normal", raw)
            if ptds.get(raw, raw) != normal.get(raw, raw):
                add(ptds[raw], params, "ptds", raw)
    rows = []
    for sym in sorted(protos):
        proc = raw_of.get(sym, proc_name(sym))
        kind = KINDS.get(proc_name(sym))
        if not kind:
            continue
        params, origin = protos[sym]
        ptsz = 1 if re.search(r"_pt[sd][sz]$", sym) else 0
        cur = 1 if (normal.get(proc, proc) == sym or ptds.get(proc, proc) == sym) else 0
        names = []
        for p in params.split(","):
            p = p.strip()
            if p == "void":
                continue
            names.append(re.findall(r"\w+", p)[-1])
        args = "(" + ", ".join(names) + ")"
        types = {}
        for p in params.split(","):
            ws = re.findall(r"[\w*]+", p.strip())
            if ws:
                types[re.findall(r"\w+", p)[-1]] = " ".join(ws[:-1])
        stream = next((n for n, t in types.items() if t == "CUstream"), None)
        events = [n for n, t in types.items() if t == "CUevent"]
        flags = next((n for n, t in types.items() if t == "unsigned int" and n.lower() == "flags"),
                     "0")
        a = b = c = "0"
        if kind in ("RECORD",):
            a, b, c = events[0], stream, flags
        elif kind == "WAIT":
            a, b, c = stream, events[0], flags
        elif kind in ("WORK", "STREAM_QUERY", "STREAM_SYNC", "STREAM_DESTROY", "CAPTURE_BEGIN",
                      "GRAPH_LAUNCH"):
            a = stream
            if a is None and proc_name(sym) in DEFAULT_STREAM_WORK:
                a = "NULL"
            if a is None:
                sys.exit(f"no stream parameter in {sym}")
        elif kind == "LAUNCH_EX":
            a, b = "(config ? config->hStream : NULL)", "config"
        elif kind == "MULTI_WORK":
            a, b = names[0], names[1]
        elif kind in ("CTX_RECORD", "CTX_WAIT", "GRAPH_EVENT"):
            a = events[0]
        elif kind == "GRAPH_NODE":
            a = next(n for n, t in types.items() if t.startswith("CUgraphNodeParams"))
        elif kind == "MEM_FREE":
            a, b = names[0], ("1" if "Host" in proc_name(sym) else "0")
        elif kind in ("EVENT_QUERY", "EVENT_SYNC", "EVENT_DESTROY"):
            a = events[0]
        elif kind == "ELAPSED":
            a, b = events[0], events[1]
        elif kind in ("STREAM_CREATE", "EVENT_CREATE"):
            a, b = names[0], names[1]
        elif kind == "IPC_OPEN_EVENT":
            a = names[0]
        elif kind == "IPC_GET_EVENT":
            a = events[0]
        rows.append(f'    H({sym}, "{proc}", {kind}, {ptsz}, {cur}, ({params}), {args}, {a}, {b}, {c})')
    out = []
    out.append("""/* The CUDA driver entry points that libprophet.so wraps (preload/cuda_api/cuda_hooks.c), one line each:
 *   H(symbol, name asked for by cuGetProcAddress, kind, ptsz, current, (parameters), (arguments),
 *     a, b, c)
 * kind: what the wrapper asks the holding engine (preload/holding/holding.h) before the driver runs:
 *   RECORD (a event, b stream, c flags), WAIT (a stream, b event, c flags), WORK (a stream: real
 *   work enqueued; NULL for the deprecated launches on the default stream), GRAPH_LAUNCH (a
 *   stream), LAUNCH_EX (a stream, b config: its event attributes), MULTI_WORK (a launch parameter
 *   list, b its length), CTX_RECORD, CTX_WAIT, GRAPH_EVENT (a event), GRAPH_NODE (a node params),
 *   SYNC_WORK (a synchronous copy or memset: work on the default stream, then a host wait),
 *   EVENT_QUERY, STREAM_QUERY, ELAPSED (a, b events), EVENT_SYNC, STREAM_SYNC, CTX_SYNC,
 *   MEM_FREE (a the pointer freed, b 1 for host memory),
 *   EVENT_DESTROY, STREAM_DESTROY, STREAM_CREATE (a out-handle, b flags; told after success),
 *   CAPTURE_BEGIN (a stream), OTHER (nothing to ask), PROCADDR (cuGetProcAddress: hand-written),
 *   EVENT_CREATE (a out-handle, b flags; told after success), IPC_OPEN_EVENT (a out-handle; told
 *   after success), IPC_GET_EVENT (a event: made real first, told after success).
 * ptsz: 1 for the per-thread default stream forms (_ptsz, _ptds). current: 1 when this toolkit's
 * cuda.h maps the name to this symbol (in its flavour): what cuGetProcAddress is taken to have
 * returned when the driver hands out a pointer that is none of its exported symbols, if the
 * version asked for is known to get its ABI (PROPHET_CUDA_HOOK_ABI below).
 * GENERATED by scripts/gen-cuda-hook-table.py from """ + path + """; do not edit.
 * Prototypes are cuda.h's; legacy ones (CUDA < 3.2 and the like) spell CUdeviceptr_v1 as unsigned
 * int and the *_v1 copy descriptors as const void *: the same ABI, the wrapper only forwards. */
#ifndef PROPHET_CUDA_HOOK_TABLE_H
#define PROPHET_CUDA_HOOK_TABLE_H

/* clang-format off */
#define PROPHET_CUDA_HOOKS(H) \\""")
    out.append(" \\\n".join(rows))
    out.append("/* clang-format on */\n")
    undef = sorted(s for s in protos if s in normal and s in {r.split("(")[1].split(",")[0] for r in rows})
    out.append("#endif\n")
    version = re.search(r"#define CUDA_VERSION (\d+)", text)
    header_version = int(version.group(1)) if version else 0
    abis = abi_versions(path)
    out.append("""/* For cuGetProcAddress answers that no exported symbol names: this cuda.h's CUDA_VERSION, and for
 * each entry that cuda.h maps its name to (current = 1), the requested versions (first, last) that
 * get this entry's ABI (cudaTypedefs.h's PFN_<name>_v<version> of the same parameter types, up to
 * the next such version or CUDA_VERSION; 0, 0: unknown). Any other version may get another ABI
 * (preload/cuda_api/cuda_hooks.c hands the driver's answer out unwrapped). */
#ifndef PROPHET_CUDA_HOOK_ABI
#define PROPHET_CUDA_HOOK_HEADER_VERSION """ + str(header_version) + """
/* clang-format off */
#define PROPHET_CUDA_HOOK_ABI(V) \\""")
    vrows = []
    for sym in sorted(protos):
        proc = raw_of.get(sym, proc_name(sym))
        if not KINDS.get(proc_name(sym)):
            continue
        if not (normal.get(proc, proc) == sym or ptds.get(proc, proc) == sym):
            continue
        fl = re.search(r"_pt[sd][sz]$", sym)
        first, last = abi_range(abis, proc, fl.group(0) if fl else "", protos[sym][0],
                                header_version)
        vrows.append(f"    V({sym}, {first}, {last})")
    out.append(" \\\n".join(vrows))
    out.append("/* clang-format on */\n#endif\n")
    out.append("/* cuda.h's renaming macros over the table's own symbols: cuda_hooks.c defines them all. */")
    out.append("#ifdef PROPHET_CUDA_HOOK_UNDEF")
    out.extend(f"#undef {s}" for s in undef)
    out.append("#endif")
    text = "\n".join(out) + "\n"
    if len(argv) > 1:
        with open(argv[1], "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


sys.exit(main())
