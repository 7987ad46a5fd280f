#!/usr/bin/env python3
"""realjobs.py - the jobs people run in 2026, without and with the preload, on one real GPU.

SYNOPSIS
    scripts/gpu/realjobs.py [--cases "CASE ..."] [--steps N] [--runs R] [--out DIR]
                            [--case-timeout S] [--preload PATH] [--budget S] [--device cuda|cpu]
    scripts/gpu/realjobs.py --list
    scripts/gpu/realjobs.py worker --case CASE --out FILE --steps N   (one rank; started by the above)

DESCRIPTION
    Runs each case as a pair, without LD_PRELOAD and with LD_PRELOAD=PATH (default
    build/lib/libprophet.so) and no PROPHET_* variable but PROPHET_DEBUG=INFO, which only reports:
    every knob at its default. Each run starts W rank processes as torchrun does (RANK,
    LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), the W ranks sharing the one GPU as W NCCL
    ranks over NCCL's socket transport (a per-rank NCCL_HOSTID; NCCL_SOCKET_IFNAME=lo, IB, P2P
    and SHM off), as scripts/gpu-check.sh does. The
    model is a 2-layer transformer encoder (d_model 256, 4 heads, feed-forward 1024, 32 tokens,
    batch 16, 100 classes) on synthetic data with fixed seeds and deterministic kernels, unless a
    case says otherwise. No step synchronises the host with the GPU but what the job itself does
    (the host may run ahead, as PyTorch lets it); the time of a window of steps is read with one
    synchronisation at each of its ends.

    Per case it prints:
      ranks      whether the trained parameters are bitwise identical on every rank, per variant
                 (FSDP cases compare the full parameters each rank gathers);
      vs none    the largest |preload - no preload| over the parameters, against the stated
                 tolerance (fp32: 1e-3*max|p| + 1e-5; bf16: 1e-2*max|p| + 1e-3), and whether bitwise;
      blocks>1   from the preload's summary lines (rank 0, all its communicators): blocks of more
                 than one call, i.e. calls held and released regrouped;
      time       no preload -> preload, over steps 3.. ("all") and over the second half ("steady",
                 after the preload's first trial round), with the ratio (below 1: faster);
      checks     case-specific checks (the IPC consumer's exact reads, the extra calls seen).
    and, with --overhead (the default when the build has it), the preload's host time per
    intercepted ncclAllReduce on the real driver and the real NCCL: build/bin/prophet-bench-overhead
    run with the emulated libraries off its search path (1 rank; direct, PROPHET_DISABLE=1,
    observe, the default hold mode).

CASES
    compile-ddp     torch.compile of the DDP-wrapped model (DDPOptimizer splits the compiled graph
                    at DDP's buckets; bucket_cap_mb=1 gives several buckets).
    compile-funcol  the model eager; the gradient sync and the SGD update one compiled function:
                    per-parameter functional all-reduces (torch.distributed._functional_collectives,
                    ReduceOp AVG, async, their waits where Inductor puts them), the update fused by
                    Inductor into Triton kernels that consume the reduced gradients.
    fsdp2           FSDP2 fully_shard per layer and at the root, 2 ranks: reduce-scatter and
                    all-gather pass through the preload untouched; results exact.
    hsdp            FSDP2 on a 2x2 device mesh (replicate x shard), 4 ranks: the replicate-axis
                    all-reduces are the preload's to regroup.
    bf16-ddp        DDP of the model in bf16 (bf16 all-reduces), bucket_cap_mb=1.
    accum           gradient accumulation over 4 micro-steps, then the per-parameter all-reduce loop
                    (ReduceOp.AVG); a loss all_reduce + .item() every 10 steps; an evaluation with
                    metric all-reduces (a float sum and an int64 count) + .item() every 50 steps.
    accum-ddp       the same loop with DDP: no_sync() for the first 3 micro-steps.
    ipc             torch.multiprocessing: after the per-parameter-like loop of all_reduce calls
                    on 24 tensors of different sizes, each rank hands its last tensor to a consumer process
                    (CUDA IPC: PyTorch records an interprocess event on the current stream) right
                    after the all_reduce returns (its wait() done), with no host sync; the consumer
                    checks every value exactly; every step.

OPTIONS
    --cases "..."       cases to run, in order (default: all, in the order above).
    --steps N           steps per run (default per case: 80; fsdp2 30; accum 110; ipc 60).
    --runs R            alternated pairs per case (default 1).
    --out DIR           results and logs (default gpu-realjobs-out).
    --case-timeout S    seconds one run may take before it counts as hung (default 150).
    --budget S          stop starting new runs after S seconds (default: no limit); what ran is
                        reported.
    --no-overhead       skip the host-time-per-call measurement.
    --device cpu        a smoke test of this script without a GPU (gloo, CPU tensors; only the
                        cases PyTorch offers there; no preload figures).

EXIT STATUS
    0 when every case that ran passed its checks, 1 when a check failed or a run failed or hung,
    2 on bad arguments.
"""
import argparse
import glob
import hashlib
import json
import os
import re
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CASES = ["compile-ddp", "compile-funcol", "fsdp2", "hsdp", "bf16-ddp", "accum", "accum-ddp", "ipc"]
DEFAULT_STEPS = {"fsdp2": 30, "accum": 110, "accum-ddp": 110, "ipc": 60}
WORLD = {"hsdp": 4}
# Cases whose pattern lets calls be held and regrouped (blocks of more than one call expected).
EXPECT_GROUPING = {"compile-funcol", "accum", "ipc"}


# ----------------------------------------------------------------------------------------------
# The worker: one rank of one run.
# ----------------------------------------------------------------------------------------------

def worker_setup(device):
    import torch
    import torch.distributed as dist

    dist.init_process_group("nccl" if device == "cuda" else "gloo")
    if device == "cuda":
        torch.cuda.set_device(0)  # every rank shares the one GPU
    torch.manual_seed(1234)
    torch.use_deterministic_algorithms(True, warn_only=True)
    if device == "cuda":
        torch.backends.cudnn.benchmark = False
        torch.backends.cudnn.deterministic = True
        # the fused attention backward kernels are not deterministic; the math kernel is
        for name in ("enable_flash_sdp", "enable_mem_efficient_sdp", "enable_cudnn_sdp"):
            if hasattr(torch.backends.cuda, name):
                getattr(torch.backends.cuda, name)(False)
    return dist.get_rank(), dist.get_world_size()


def build_model(device, dtype=None):
    import torch.nn as nn

    layer = nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024, dropout=0.0,
                                       batch_first=True)

    class Tiny(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
            self.head = nn.Linear(256, 100)

        def forward(self, x):
            return self.head(self.body(x).mean(dim=1))

    m = Tiny().to(device)
    return m.to(dtype) if dtype is not None else m


class Clock:
    """Step instants without a sync per step; a sync at the ends of the measured windows."""

    def __init__(self, device, steps):
        import torch

        self.sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
        self.steps, self.marks = steps, {}
        self.steady = steps // 2

    def at(self, step):
        if step in (3, self.steady, self.steps):
            self.sync()
            self.marks[step] = time.perf_counter()

    def result(self):
        m = self.marks
        return {"median_iter_s": (m[self.steps] - m[3]) / (self.steps - 3),
                "steady_iter_s": (m[self.steps] - m[self.steady]) / (self.steps - self.steady),
                "steady_from": self.steady}


def batch(gen, device, dtype=None):
    import torch

    x = torch.randn((16, 32, 256), device=device, generator=gen)
    y = torch.randint(0, 100, (16,), device=device, generator=gen)
    return (x.to(dtype) if dtype is not None else x), y


def per_param_avg(params):
    import torch.distributed as dist

    gloo = dist.get_backend() == "gloo"  # the CPU smoke test: gloo has no AVG
    for p in params:
        if p.grad is not None:
            if gloo:
                dist.all_reduce(p.grad)
                p.grad /= dist.get_world_size()
            else:
                dist.all_reduce(p.grad, op=dist.ReduceOp.AVG)


def run_train(a, model, params, sync, rank, device, dtype=None, micro=1, extras=False):
    """The training loop shared by the DDP-like cases. sync(): the gradient sync after the last
    micro-step (None: DDP does it in backward). Returns the clock's figures and the extras seen."""
    import contextlib

    import torch
    import torch.distributed as dist
    import torch.nn as nn

    opt = torch.optim.SGD(params, lr=0.01, momentum=0.9)
    gen = torch.Generator(device=device).manual_seed(99 + rank)
    clock, seen = Clock(device, a.steps), {"loss_logs": 0, "evals": 0}
    for step in range(a.steps):
        clock.at(step)
        opt.zero_grad(set_to_none=True)
        for m in range(micro):
            x, y = batch(gen, device, dtype)
            quiet = model.no_sync() if (m < micro - 1 and hasattr(model, "no_sync")) \
                else contextlib.nullcontext()
            with quiet:
                loss = nn.functional.cross_entropy(model(x), y) / micro
                loss.backward()
        if sync is not None:
            sync()
        opt.step()
        if extras and step % 10 == 9:  # the loss, logged: a 1-element all-reduce and a host sync
            t = loss.detach().float().reshape(1).clone()
            dist.all_reduce(t, op=dist.ReduceOp.SUM)
            t.item()
            seen["loss_logs"] += 1
        if extras and step % 50 == 49:  # an evaluation: forward only, metric all-reduces
            with torch.no_grad():
                x, y = batch(gen, device, dtype)
                out = model(x)
                correct = (out.argmax(dim=1) == y).sum().to(torch.int64).reshape(1)
                lsum = nn.functional.cross_entropy(out.float(), y, reduction="sum").reshape(1)
                dist.all_reduce(correct)
                dist.all_reduce(lsum)
                correct.item(), lsum.item()
            seen["evals"] += 1
    clock.at(a.steps)
    return clock.result(), seen


def case_ddp_like(a, rank, world, device):
    import torch
    import torch.nn as nn

    dtype = torch.bfloat16 if a.case == "bf16-ddp" else None
    model = build_model(device, dtype)
    kw = {"device_ids": [0]} if device == "cuda" else {}
    micro, extras, sync = 1, False, None
    if a.case in ("compile-ddp", "bf16-ddp", "accum-ddp"):
        model = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=1, **kw)
        params, plain = list(model.parameters()), model.module
    else:  # accum: the per-parameter AVG loop after the last micro-step
        params, plain = list(model.parameters()), model
        sync = lambda: per_param_avg(params)  # noqa: E731
    if a.case.startswith("accum"):
        micro, extras = 4, True
    run_model = torch.compile(model) if a.case == "compile-ddp" else model
    figs, seen = run_train(a, run_model, params, sync, rank, device, dtype, micro, extras)
    return figs, list(plain.parameters()), {"extras_seen": seen}


def case_compile_funcol(a, rank, world, device):
    import torch
    import torch.distributed as dist
    import torch.distributed._functional_collectives as funcol
    import torch.nn as nn

    model = build_model(device)
    params = list(model.parameters())
    group = dist.group.WORLD

    def sync_and_update(ps, grads, lr):
        # per-parameter all-reduces, async; each result waited where the update first reads it
        reduced = [funcol.all_reduce(g, "avg", group) for g in grads]
        for p, r in zip(ps, reduced):
            p.sub_(r * lr)

    step_fn = torch.compile(sync_and_update)
    gen = torch.Generator(device=device).manual_seed(99 + rank)
    clock = Clock(device, a.steps)
    for step in range(a.steps):
        clock.at(step)
        for p in params:
            p.grad = None
        x, y = batch(gen, device)
        nn.functional.cross_entropy(model(x), y).backward()
        with torch.no_grad():
            step_fn(params, [p.grad for p in params], 0.01)
    clock.at(a.steps)
    return clock.result(), params, {}


def case_fsdp(a, rank, world, device):
    import torch
    import torch.nn as nn
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    model = build_model(device)
    if a.case == "hsdp":
        mesh = init_device_mesh(device, (2, world // 2), mesh_dim_names=("replicate", "shard"))
    else:
        mesh = init_device_mesh(device, (world,))
    for layer in model.body.layers:
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    gen = torch.Generator(device=device).manual_seed(99 + rank)
    clock = Clock(device, a.steps)
    for step in range(a.steps):
        clock.at(step)
        opt.zero_grad(set_to_none=True)
        x, y = batch(gen, device)
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    clock.at(a.steps)
    full = [p.full_tensor() for p in model.parameters()]
    return clock.result(), full, {}


def ipc_consumer(inq, outq, world, ntensors):
    """The other process: it opens each shared tensor (PyTorch waits on the producer's
    interprocess event on its current stream) and checks every value exactly."""
    import torch

    torch.cuda.set_device(0)
    while True:
        item = inq.get()
        if item is None:
            return
        step, t = item
        # every rank filled tensor i with (rank + 1) * (i + 1) + step; the sum over the ranks
        i = ntensors - 1
        want = float(sum((r + 1) * (i + 1) + step for r in range(world)))
        bad = int((t != want).sum().item())
        outq.put((step, bad, float(t.flatten()[0].item()), want))
        # drop the storage before the next one arrives: PyTorch's consumer-side cache would
        # otherwise hand back this storage for the same memory and skip the producer's event
        del item, t


def case_ipc(a, rank, world, device):
    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp

    ctx = mp.get_context("spawn")
    ntensors = 24
    inq, outq = ctx.Queue(), ctx.Queue()
    cons = ctx.Process(target=ipc_consumer, args=(inq, outq, world, ntensors), daemon=True)
    cons.start()
    # sizes as a model's gradients have them, all different: a loop of equal calls has no
    # iteration the preload could learn (each call would look like the next)
    sizes = [(1 << 12) * (i % 7 + 1) + 256 * i for i in range(ntensors)]
    ts = [torch.empty(n, device=device) for n in sizes]
    clock = Clock(device, a.steps)
    bad_steps, bad_values, checked = [], 0, 0
    for step in range(a.steps):
        clock.at(step)
        # the last tensor is a fresh storage each step: PyTorch shares a storage's memory once
        ts[-1] = torch.empty(sizes[-1], device=device)
        for i, t in enumerate(ts):
            t.fill_(float((rank + 1) * (i + 1) + step))
        for t in ts:
            dist.all_reduce(t)  # async_op=False: work.wait() has made the current stream wait
        inq.put((step, ts[-1]))  # shared at once: no host sync between the call and the share
        s, bad, first, want = outq.get()
        checked += 1
        if bad:
            bad_steps.append(s)
            bad_values += bad
    clock.at(a.steps)
    inq.put(None)
    cons.join(timeout=30)
    other = {"ipc_steps_checked": checked, "ipc_bad_steps": bad_steps,
             "ipc_bad_values": bad_values}
    return clock.result(), ts, other


def worker(argv):
    ap = argparse.ArgumentParser(prog="realjobs.py worker")
    ap.add_argument("--case", required=True, choices=CASES)
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    a = ap.parse_args(argv)
    import torch
    import torch.distributed as dist

    rank, world = worker_setup(a.device)
    if a.case in ("compile-funcol",):
        figs, params, other = case_compile_funcol(a, rank, world, a.device)
    elif a.case in ("fsdp2", "hsdp"):
        figs, params, other = case_fsdp(a, rank, world, a.device)
    elif a.case == "ipc":
        figs, params, other = case_ipc(a, rank, world, a.device)
    else:
        figs, params, other = case_ddp_like(a, rank, world, a.device)
    tensors = [p.detach().float().cpu() for p in params]
    digests = [hashlib.sha256(p.detach().cpu().contiguous().view(torch.uint8).numpy().tobytes())
               .hexdigest() for p in params]
    torch.save(tensors, f"{a.out}.rank{rank}.pt")
    meta = {"case": a.case, "steps": a.steps, "world": world, "rank": rank,
            "dtype": str(params[0].dtype), "torch": torch.__version__,
            "param_sha256": digests, **figs, **other}
    if a.device == "cuda":
        meta["nccl"] = ".".join(map(str, torch.cuda.nccl.version()))
        meta["gpu"] = torch.cuda.get_device_name(0)
    with open(f"{a.out}.rank{rank}.json", "w") as f:
        json.dump(meta, f)
    dist.destroy_process_group()  # the preload's summary lines are written at the comm's destroy


# ----------------------------------------------------------------------------------------------
# The driver: pairs of runs, then the checks.
# ----------------------------------------------------------------------------------------------

def free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_one(a, case, variant, run):
    """One run: W rank processes, started as torchrun would start them (RANK, LOCAL_RANK,
    WORLD_SIZE, MASTER_ADDR, MASTER_PORT), each with its own NCCL_HOSTID; all killed when one
    fails or the run outlasts --case-timeout."""
    tag = f"{case}-{variant}-r{run}"
    base = os.path.join(a.out, tag)
    world, port = WORLD.get(case, 2), free_port()
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env.update(NCCL_SOCKET_IFNAME="lo", NCCL_IB_DISABLE="1", NCCL_P2P_DISABLE="1",
               NCCL_SHM_DISABLE="1", PYTHONUNBUFFERED="1", MASTER_ADDR="127.0.0.1",
               MASTER_PORT=str(port), WORLD_SIZE=str(world), LOCAL_WORLD_SIZE=str(world))
    if variant == "prophet":
        env.update(LD_PRELOAD=a.preload, PROPHET_DEBUG="INFO")
    cmd = [sys.executable, os.path.abspath(__file__), "worker", "--case", case,
           "--steps", str(a.steps or DEFAULT_STEPS.get(case, 80)), "--out", base,
           "--device", a.device]
    t0, rc = time.time(), 0
    with open(base + ".log", "w") as log:
        procs = [subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                  env=dict(env, RANK=str(r), LOCAL_RANK=str(r),
                                           NCCL_HOSTID=f"prophet-realjobs-{r}"))
                 for r in range(world)]
        while any(p.poll() is None for p in procs):
            bad = [p.returncode for p in procs if p.returncode not in (None, 0)]
            if bad or time.time() - t0 > a.case_timeout:
                rc = bad[0] if bad else "hung"
                time.sleep(2 if bad else 0)
                for p in procs:
                    if p.poll() is None:
                        p.kill()
                break
            time.sleep(0.2)
        for p in procs:
            p.wait()
        rc = rc or next((p.returncode for p in procs if p.returncode), 0)
    print(f"realjobs: {tag} {'ran' if rc == 0 else 'FAILED (' + str(rc) + ')'} in "
          f"{time.time() - t0:.0f} s", flush=True)
    if rc != 0:
        with open(base + ".log") as f:
            print("".join(f.readlines()[-25:]), flush=True)
    return rc == 0


def meta(a, case, variant, run, rank):
    with open(os.path.join(a.out, f"{case}-{variant}-r{run}.rank{rank}.json")) as f:
        return json.load(f)


def summaries(a, case, variant, run):
    text = open(os.path.join(a.out, f"{case}-{variant}-r{run}.log")).read()
    return re.findall(r"summary comm \d+ rank 0/\d+: (.*)", text)


def check_case(a, case, runs_done):
    import torch

    ok, world = True, WORLD.get(case, 2)
    m0 = meta(a, case, "base", 1, 0)
    tag = f"{case:14s}"
    for run in range(1, runs_done + 1):
        for v in ("base", "prophet"):
            same = all(meta(a, case, v, run, r)["param_sha256"] ==
                       meta(a, case, v, run, 0)["param_sha256"] for r in range(world))
            ok &= same
            print(f"{tag} run {run} {v:7s}: ranks bitwise identical: {same}")
    B = torch.load(os.path.join(a.out, f"{case}-base-r1.rank0.pt"))
    P = torch.load(os.path.join(a.out, f"{case}-prophet-r1.rank0.pt"))
    bf16 = "bfloat16" in m0["dtype"]
    rel, absol = (1e-2, 1e-3) if bf16 else (1e-3, 1e-5)
    worst = 0.0
    for p, b in zip(P, B):
        p, b = p.double(), b.double()
        tol = rel * b.abs().max().item() + absol
        worst = max(worst, (p - b).abs().max().item() / tol)
    bitwise = meta(a, case, "prophet", 1, 0)["param_sha256"] == m0["param_sha256"]
    ok &= worst <= 1
    print(f"{tag} vs none: worst max|diff|/tolerance = {worst:.3g} "
          f"({'within' if worst <= 1 else 'OUTSIDE'} {rel:g}*max|p|+{absol:g}); "
          f"bitwise equal: {bitwise}")
    for key, what in (("median_iter_s", "all steps from 3"), ("steady_iter_s", "steady half")):
        b = [meta(a, case, "base", r, 0)[key] * 1e3 for r in range(1, runs_done + 1)]
        p = [meta(a, case, "prophet", r, 0)[key] * 1e3 for r in range(1, runs_done + 1)]
        mb, mp = statistics.median(b), statistics.median(p)
        print(f"{tag} time, {what}: {mb:.2f} ms -> {mp:.2f} ms per step (ratio {mp / mb:.3f}; "
              f"runs {', '.join(f'{x:.2f}' for x in b)} -> {', '.join(f'{x:.2f}' for x in p)})")
    grouped = []
    for run in range(1, runs_done + 1):
        lines = summaries(a, case, "prophet", run)
        grouped.append(sum(int(m) for s in lines for m in re.findall(r"blocks>1=(\d+)", s)))
        for s in lines:
            print(f"{tag} run {run} summary: {s}")
    if a.device == "cuda":
        held = all(g > 0 for g in grouped)
        if case in EXPECT_GROUPING:
            ok &= held
        print(f"{tag} blocks>1 per run: {grouped} "
              f"({'held and regrouped' if held else 'nothing grouped'}"
              f"{'; expected' if case in EXPECT_GROUPING else ''})")
    for v in ("base", "prophet"):
        m = meta(a, case, v, 1, 0)
        if "extras_seen" in m:
            print(f"{tag} {v:7s} extra calls made: {m['extras_seen']}")
        if "ipc_steps_checked" in m:
            bad = [meta(a, case, v, run, r)["ipc_bad_steps"]
                   for run in range(1, runs_done + 1) for r in range(world)]
            nbad = sum(len(x) for x in bad)
            ok &= nbad == 0
            print(f"{tag} {v:7s} IPC consumer: {m['ipc_steps_checked']} steps checked per rank, "
                  f"steps read early (all runs, ranks): {nbad} {bad if nbad else ''}")
    print(f"{tag} {'PASS' if ok else 'FAIL'}", flush=True)
    return ok


def overhead(a):
    bench = os.path.join(ROOT, "build", "bin", "prophet-bench-overhead")
    emu = os.path.join(ROOT, "build", "lib", "emu")
    if not os.path.exists(bench):
        print("realjobs: overhead: no build/bin/prophet-bench-overhead; skipped")
        return True
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    import torch

    torch.cuda.init()
    torch.cuda.nccl.version()  # the driver and the NCCL that PyTorch loads, found in our own maps
    dirs = []
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1]
            if re.search(r"/lib(nccl\.so\.2|cuda\.so\.1)", path) and \
                    os.path.dirname(path) not in dirs:
                dirs.append(os.path.dirname(path))
    env["LD_LIBRARY_PATH"] = ":".join(dirs + [env.get("LD_LIBRARY_PATH", "")]).rstrip(":")
    print(f"realjobs: overhead bench against {', '.join(dirs)}", flush=True)
    hidden = emu + ".off"
    if os.path.isdir(emu):  # the bench's RUNPATH names the emulated libraries: move them aside
        os.rename(emu, hidden)
    try:
        r = subprocess.run([bench, "--iters", "400", "--preload", a.preload], env=env,
                           capture_output=True, text=True, timeout=120)
    finally:
        if os.path.isdir(hidden):
            os.rename(hidden, emu)
    print("realjobs: host time per intercepted ncclAllReduce on the real driver and NCCL:")
    print(r.stdout + r.stderr[-2000:], flush=True)
    return r.returncode == 0


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "worker":
        return worker(sys.argv[2:])
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter,
                                 usage=argparse.SUPPRESS)
    ap.add_argument("--cases", default=" ".join(CASES))
    ap.add_argument("--steps", type=int, default=0)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--out", default="gpu-realjobs-out")
    ap.add_argument("--case-timeout", type=float, default=150)
    ap.add_argument("--budget", type=float, default=0)
    ap.add_argument("--preload", default=os.path.join(ROOT, "build", "lib", "libprophet.so"))
    ap.add_argument("--no-overhead", action="store_true")
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args()
    if a.list:
        print("\n".join(CASES))
        return 0
    cases = a.cases.split()
    for c in cases:
        if c not in CASES:
            print(f"realjobs: unknown case {c} (--list)", file=sys.stderr)
            return 2
    if a.device == "cuda" and not os.path.exists(a.preload):
        print(f"realjobs: build first ({a.preload} missing)", file=sys.stderr)
        return 1
    os.makedirs(a.out, exist_ok=True)
    for f in glob.glob(os.path.join(a.out, "*")):
        os.remove(f)
    import torch

    print(f"realjobs: torch {torch.__version__}" +
          (f", CUDA {torch.version.cuda}, NCCL {'.'.join(map(str, torch.cuda.nccl.version()))}, "
           f"{torch.cuda.get_device_name(0)}" if a.device == "cuda" else ", CPU smoke test"),
          flush=True)
    start, status = time.time(), 0
    if a.device == "cuda" and not a.no_overhead:
        status |= 0 if overhead(a) else 1
    for case in cases:
        done = 0
        for run in range(1, a.runs + 1):
            if a.budget and time.time() - start > a.budget:
                print(f"realjobs: budget of {a.budget:.0f} s spent; {case} run {run} not started")
                break
            if not (run_one(a, case, "base", run) and
                    run_one(a, case, "prophet", run)):
                status = 1
                break
            done = run
        if done:
            try:
                status |= 0 if check_case(a, case, done) else 1
            except Exception as e:  # a check that cannot read its files is a failed check
                print(f"realjobs: {case}: check failed: {e!r}", flush=True)
                status = 1
    print(f"realjobs: {'every case passed' if status == 0 else 'FAILURES above'} "
          f"({time.time() - start:.0f} s)")
    return status


if __name__ == "__main__":
    sys.exit(main())
