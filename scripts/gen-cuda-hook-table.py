#!/usr/bin/env python3
"""Writes preload/cuda_hook_table.h: the CUDA driver entry points that libprophet.so wraps, one
X-macro line each, with the exact prototype taken from the toolkit's cuda.h.
    scripts/gen-cuda-hook-table.py [/usr/local/cuda/include/cuda.h] > preload/cuda_hook_table.h
Every symbol the header maps a wrapped name to is listed: the name itself, its versioned forms
(_v2, _v3), the per-thread default stream forms (_ptsz, _ptds, declared under
CUDA_API_PER_THREAD_DEFAULT_STREAM) and the legacy forms that cuda.h declares for old binaries
(under __CUDA_API_VERSION_INTERNAL; their 32-bit CUdeviceptr_v1 and *_v1 structures are spelled
with ABI-equal types, since a wrapper only forwards them)."""
import re
import sys

# name asked for by cuGetProcAddress -> kind (docs/design.md, "Interception of the CUDA driver")
KINDS = {
    "cuEventRecord": "RECORD", "cuEventRecordWithFlags": "RECORD",
    "cuStreamWaitEvent": "WAIT",
    "cuEventQuery": "EVENT_QUERY", "cuStreamQuery": "STREAM_QUERY",
    "cuEventSynchronize": "EVENT_SYNC", "cuStreamSynchronize": "STREAM_SYNC",
    "cuCtxSynchronize": "CTX_SYNC", "cuMemFree": "CTX_SYNC", "cuMemFreeHost": "CTX_SYNC",
    "cuEventElapsedTime": "ELAPSED",
    "cuEventDestroy": "EVENT_DESTROY", "cuStreamDestroy": "STREAM_DESTROY",
    "cuStreamCreate": "STREAM_CREATE", "cuStreamCreateWithPriority": "STREAM_CREATE",
    "cuStreamBeginCapture": "CAPTURE_BEGIN", "cuStreamBeginCaptureToGraph": "CAPTURE_BEGIN",
    "cuStreamEndCapture": "OTHER",
}
WORK = """cuLaunchKernel cuLaunchKernelEx cuLaunchCooperativeKernel cuLaunchHostFunc
cuStreamAddCallback cuGraphLaunch cuMemcpyAsync cuMemcpyHtoDAsync cuMemcpyDtoHAsync
cuMemcpyDtoDAsync cuMemcpyHtoAAsync cuMemcpyAtoHAsync cuMemcpy2DAsync cuMemcpy3DAsync
cuMemcpyPeerAsync cuMemcpy3DPeerAsync cuMemcpyBatchAsync cuMemcpy3DBatchAsync cuMemsetD8Async
cuMemsetD16Async cuMemsetD32Async cuMemsetD2D8Async cuMemsetD2D16Async cuMemsetD2D32Async
cuStreamWaitValue32 cuStreamWaitValue64 cuStreamWriteValue32 cuStreamWriteValue64
cuStreamBatchMemOp cuMemAllocAsync cuMemFreeAsync cuMemAllocFromPoolAsync
cuSignalExternalSemaphoresAsync cuWaitExternalSemaphoresAsync"""
SYNC_WORK = """cuMemcpy cuMemcpyHtoD cuMemcpyDtoH cuMemcpyDtoD cuMemcpyDtoA cuMemcpyAtoD
cuMemcpyHtoA cuMemcpyAtoH cuMemcpyAtoA cuMemcpy2D cuMemcpy2DUnaligned cuMemcpy3D cuMemcpyPeer
cuMemcpy3DPeer cuMemsetD8 cuMemsetD16 cuMemsetD32 cuMemsetD2D8 cuMemsetD2D16 cuMemsetD2D32"""
for n in WORK.split():
    KINDS[n] = "WORK"
for n in SYNC_WORK.split():
    KINDS[n] = "SYNC_WORK"
KINDS["cuGetProcAddress"] = "PROCADDR"

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


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "/usr/local/cuda/include/cuda.h"
    text = open(path).read()
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
        a = b = "0"
        if kind in ("RECORD",):
            a, b = events[0], stream
        elif kind == "WAIT":
            a, b = stream, events[0]
        elif kind in ("WORK", "STREAM_QUERY", "STREAM_SYNC", "STREAM_DESTROY", "CAPTURE_BEGIN"):
            a = stream
            if sym.startswith("cuLaunchKernelEx"):
                a = "(config ? config->hStream : NULL)"
            if a is None:
                sys.exit(f"no stream parameter in {sym}")
        elif kind in ("EVENT_QUERY", "EVENT_SYNC", "EVENT_DESTROY"):
            a = events[0]
        elif kind == "ELAPSED":
            a, b = events[0], events[1]
        elif kind == "STREAM_CREATE":
            a, b = names[0], names[1]
        rows.append(f'    H({sym}, "{proc}", {kind}, {ptsz}, {cur}, ({params}), {args}, {a}, {b})')
    out = []
    out.append("""/* The CUDA driver entry points that libprophet.so wraps (preload/cuda_hooks.c), one line each:
 *   H(symbol, name asked for by cuGetProcAddress, kind, ptsz, current, (parameters), (arguments),
 *     a, b)
 * kind: what the wrapper asks the holding engine (preload/cuda_hold.h) before the driver runs:
 *   RECORD (a event, b stream), WAIT (a stream, b event), WORK (a stream: real work enqueued),
 *   SYNC_WORK (a synchronous copy or memset: work on the default stream, then a host wait),
 *   EVENT_QUERY, STREAM_QUERY, ELAPSED (a, b events), EVENT_SYNC, STREAM_SYNC, CTX_SYNC,
 *   EVENT_DESTROY, STREAM_DESTROY, STREAM_CREATE (a out-handle, b flags; told after success),
 *   CAPTURE_BEGIN (a stream), OTHER (nothing to ask), PROCADDR (cuGetProcAddress: hand-written).
 * ptsz: 1 for the per-thread default stream forms (_ptsz, _ptds). current: 1 when this toolkit's
 * cuda.h maps the name to this symbol (in its flavour): what cuGetProcAddress is taken to have
 * returned when the driver hands out a pointer that is none of its exported symbols.
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
    out.append("/* cuda.h's renaming macros over the table's own symbols: cuda_hooks.c defines them all. */")
    out.append("#ifdef PROPHET_CUDA_HOOK_UNDEF")
    out.extend(f"#undef {s}" for s in undef)
    out.append("#endif")
    print("\n".join(out))


main()
