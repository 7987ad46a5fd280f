#!/usr/bin/env python3
"""Unmodified PyTorch training for the GPU check (scripts/gpu-check.sh).

Run under torchrun with 2 ranks sharing one GPU (each rank sets its own NCCL_HOSTID, NCCL's socket
transport). Trains a model on synthetic data for --steps steps, with a fixed seed and deterministic
kernels, and writes per rank a JSON file (OUT with ".rankR" before ".json") with the SHA-256 of every
parameter after the last step and the median iteration time, and the parameters themselves (".pt").
scripts/gpu-check.sh compares the ranks with each other (bitwise) and the run under
LD_PRELOAD=libprophet.so with the run without it (within a floating-point tolerance: a grouped
all-reduce may use another algorithm than a lone one).

--model resnet50 | transformer; --sync ddp (DistributedDataParallel, default copy-back) | ddp-view
(gradient_as_bucket_view=True) | per-param (after backward, `for p in params: dist.all_reduce(p.grad);
p.grad /= world`: the per-parameter loop of the PyTorch tutorial) | per-param-avg (after backward,
`for p in params: dist.all_reduce(p.grad, op=dist.ReduceOp.AVG)`: no kernel of the job's between
two calls, so consecutive calls can be grouped) | hooks (one all_reduce per
parameter gradient from a hook, as naive per-tensor code does) | graph (the per-param-avg loop
captured once in a CUDA graph, on static buffers, and replayed every step: the calls issued while
the stream is captured must pass through the preload unheld, BRIEF invariant 5).
The JSON holds every step's time, the median over steps 3.. and the median over the steady
steps (from --steady-from, default the second half: after the preload's first trial round).
"""
import argparse
import hashlib
import json
import os
import statistics
import time

import torch
import torch.distributed as dist
import torch.nn as nn


def build_model(name):
    if name == "resnet50":
        import torchvision

        return torchvision.models.resnet50(num_classes=1000), (3, 224, 224), 1000
    if name == "transformer":
        layer = nn.TransformerEncoderLayer(d_model=512, nhead=8, dim_feedforward=2048,
                                           dropout=0.0, batch_first=True)
        body = nn.TransformerEncoder(layer, num_layers=6)
        head = nn.Linear(512, 1000)

        class Tiny(nn.Module):
            def __init__(self):
                super().__init__()
                self.body, self.head = body, head

            def forward(self, x):
                return self.head(self.body(x).mean(dim=1))

        return Tiny(), (128, 512), 1000
    raise SystemExit(f"unknown model {name}")


def capture_avg_loop(params, warmup):
    """Capture `all_reduce(b, AVG)` over one static buffer per parameter in a CUDA graph.

    The loop runs eagerly on a side stream first, `warmup` times (NCCL's communicator and
    PyTorch's caches must exist before a capture begins, as torch.cuda.graph's documentation
    asks), then once under capture. Returns the graph and the buffers it reduces."""
    bufs = [torch.zeros_like(p) for p in params]
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(warmup):
            for b in bufs:
                dist.all_reduce(b, op=dist.ReduceOp.AVG)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for b in bufs:
            dist.all_reduce(b, op=dist.ReduceOp.AVG)
    torch.cuda.synchronize()
    return graph, bufs


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--model", default="resnet50", choices=["resnet50", "transformer"])
    ap.add_argument("--sync", default="ddp",
                    choices=["ddp", "ddp-view", "per-param", "per-param-avg", "hooks", "graph"])
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--graph-warmup", type=int, default=3,
                    help="eager passes of the loop before the capture (graph; more than the "
                         "preload's learning, about 30, so that it holds calls before the capture)")
    ap.add_argument("--steady-from", type=int, default=None,
                    help="first step of the steady window (default: steps // 2)")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()

    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(0)  # both ranks share the one GPU
    torch.manual_seed(1234)
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    # Attention's fused backward kernels (memory-efficient, flash, cuDNN) are not deterministic:
    # with them two runs without the preload already differ. The math kernel is.
    for name in ("enable_flash_sdp", "enable_mem_efficient_sdp", "enable_cudnn_sdp"):
        if hasattr(torch.backends.cuda, name):
            getattr(torch.backends.cuda, name)(False)

    model, shape, classes = build_model(a.model)
    model = model.cuda()
    if a.sync in ("ddp", "ddp-view"):
        model = nn.parallel.DistributedDataParallel(model, device_ids=[0],
                                                    gradient_as_bucket_view=a.sync == "ddp-view")
    elif a.sync == "hooks":
        for p in model.parameters():
            # One all-reduce per gradient, issued from the hook as naive per-tensor code does.
            p.register_hook(lambda g: (dist.all_reduce(g), g.div_(world))[1])
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    if a.sync == "graph":
        graph, bufs = capture_avg_loop(list(model.parameters()), a.graph_warmup)
    gen = torch.Generator(device="cuda").manual_seed(99 + rank)
    times = []
    for step in range(a.steps):
        x = torch.randn((a.batch,) + shape, device="cuda", generator=gen)
        y = torch.randint(0, classes, (a.batch,), device="cuda", generator=gen)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        if a.sync == "per-param":
            for p in model.parameters():
                if p.grad is not None:
                    dist.all_reduce(p.grad)
                    p.grad /= world
        elif a.sync == "per-param-avg":
            for p in model.parameters():
                if p.grad is not None:
                    dist.all_reduce(p.grad, op=dist.ReduceOp.AVG)
        elif a.sync == "graph":
            grads = [p.grad for p in model.parameters()]
            for b, g in zip(bufs, grads):
                b.copy_(g)
            graph.replay()
            for b, g in zip(bufs, grads):
                g.copy_(b)
        opt.step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    steady = a.steps // 2 if a.steady_from is None else a.steady_from
    params = list(model.module.parameters() if a.sync.startswith("ddp") else model.parameters())
    digests = [hashlib.sha256(p.detach().cpu().numpy().tobytes()).hexdigest() for p in params]
    base = a.out[:-5] if a.out.endswith(".json") else a.out
    torch.save([p.detach().cpu() for p in params], f"{base}.rank{rank}.pt")
    with open(f"{base}.rank{rank}.json", "w") as f:
        json.dump({"model": a.model, "sync": a.sync, "steps": a.steps, "world": world, "rank": rank,
                   "median_iter_s": statistics.median(times[3:] or times),
                   "steady_from": steady,
                   "steady_iter_s": statistics.median(times[steady:] or times),
                   "iter_s": times,
                   "torch": torch.__version__, "nccl": ".".join(map(str, torch.cuda.nccl.version())),
                   "param_sha256": digests}, f)
    if a.sync == "graph":
        # Tearing down the process group while a graph holds captured NCCL work hangs on this
        # stack (seen on PyTorch 2.11 + NCCL 2.28.9, with and without the preload): exit.
        torch.cuda.synchronize()
        os._exit(0)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
