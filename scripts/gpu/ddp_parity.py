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
parameter gradient from a hook, as naive per-tensor code does).
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


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--model", default="resnet50", choices=["resnet50", "transformer"])
    ap.add_argument("--sync", default="ddp",
                    choices=["ddp", "ddp-view", "per-param", "per-param-avg", "hooks"])
    ap.add_argument("--steps", type=int, default=60)
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
        opt.step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    params = list(model.module.parameters() if a.sync.startswith("ddp") else model.parameters())
    digests = [hashlib.sha256(p.detach().cpu().numpy().tobytes()).hexdigest() for p in params]
    base = a.out[:-5] if a.out.endswith(".json") else a.out
    torch.save([p.detach().cpu() for p in params], f"{base}.rank{rank}.pt")
    with open(f"{base}.rank{rank}.json", "w") as f:
        json.dump({"model": a.model, "sync": a.sync, "steps": a.steps, "world": world, "rank": rank,
                   "median_iter_s": statistics.median(times[3:] or times),
                   "torch": torch.__version__, "nccl": ".".join(map(str, torch.cuda.nccl.version())),
                   "param_sha256": digests}, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
