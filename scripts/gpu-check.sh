#!/usr/bin/env bash
# The real-GPU check (needs one NVIDIA GPU, PyTorch with CUDA, torchvision, real NCCL; run from the
# repository root after `cmake -B build && cmake --build build`).
#
# For each model (resnet50, transformer) and each way of synchronising gradients (ddp: DDP's default
# copy-back; ddp-view: gradient_as_bucket_view=True; per-param: `dist.all_reduce(p.grad)` in a loop
# after backward, each followed by `p.grad /= world`; per-param-avg: the same loop with
# op=ReduceOp.AVG and no kernel between calls; hooks: one all_reduce per gradient from a hook),
# runs scripts/gpu/ddp_parity.py under torchrun with 2 ranks sharing one GPU over NCCL's socket transport (NCCL_HOSTID differs per
# rank; NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1), once without the preload and once with
# LD_PRELOAD=build/lib/libprophet.so in the DEFAULT mode (no PROPHET_* variable but PROPHET_DEBUG=INFO,
# which only reports; --gate observe sets PROPHET_GATE=observe instead). --steps (default 60) must
# exceed the ~25 iterations the preload learns before it holds anything.
# Checks, per case:
#   ranks    every parameter bitwise identical on rank 0 and rank 1, in both runs (invariant 1: every
#            rank groups the same operations the same way);
#   vs none  the run with the preload against the run without it, per parameter tensor:
#            max|a - b| <= 1e-3 * max|b| + 1e-5 (a grouped all-reduce may pick another algorithm and
#            channel split than a lone one: not bitwise, within floating-point tolerance);
#   holding  the preload's summary line (blocks, blocks>1) is printed for the record.
# Prints the iteration-time ratio. Exit status 1 if any check fails.
#   scripts/gpu-check.sh [--steps 60] [--gate hold|observe] [--out DIR] [--models "resnet50 transformer"]
#                        [--syncs "ddp ddp-view per-param per-param-avg hooks"] [--case-timeout 180]
# --case-timeout: seconds one torchrun run may take before it counts as hung (a held call that is
# never released shows as a hang, not as a wrong result).
set -euo pipefail
cd "$(dirname "$0")/.."
steps=60; gate=hold; out=gpu-check-out; case_timeout=180
models="resnet50 transformer"; syncs="ddp ddp-view per-param per-param-avg hooks"
while [ $# -gt 0 ]; do
  case "$1" in
    --steps) steps=$2; shift 2 ;;
    --gate) gate=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --syncs) syncs=$2; shift 2 ;;
    --case-timeout) case_timeout=$2; shift 2 ;;
    *) echo "gpu-check: unknown option $1" >&2; exit 2 ;;
  esac
done
lib=$PWD/build/lib/libprophet.so
[ -f "$lib" ] || { echo "gpu-check: build first ($lib missing)" >&2; exit 1; }
mkdir -p "$out"
# torchrun's console script may not be on PATH where python3 is a virtual environment's.
if command -v torchrun >/dev/null; then run=(torchrun); else run=(python3 -m torch.distributed.run); fi
python3 -c 'import torch; assert torch.cuda.is_available(); print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version(), torch.cuda.get_device_name(0))'
export NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1 NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1
# Two ranks on one GPU: a per-rank NCCL_HOSTID makes NCCL treat them as two hosts.
launcher=$out/rank_env.sh
cat > "$launcher" <<'EOS'
#!/usr/bin/env bash
export NCCL_HOSTID="prophet-gpu-check-$LOCAL_RANK"
exec python3 "$@"
EOS
chmod +x "$launcher"
status=0
for model in $models; do
  for sync in $syncs; do
    for variant in base prophet; do
      env_pre=()
      if [ $variant = prophet ]; then
        env_pre=(LD_PRELOAD="$lib" PROPHET_DEBUG=INFO)
        [ "$gate" = hold ] || env_pre+=(PROPHET_GATE="$gate")
      fi
      env "${env_pre[@]}" timeout --kill-after=10 "$case_timeout" \
        "${run[@]}" --standalone --nproc_per_node=2 --no-python "$launcher" \
        scripts/gpu/ddp_parity.py --model $model --sync $sync --steps "$steps" \
        --out "$out/$model-$sync-$variant.json" >"$out/$model-$sync-$variant.log" 2>&1 || {
          echo "gpu-check: $model $sync $variant failed:"; tail -20 "$out/$model-$sync-$variant.log"
          status=1; continue 2; }
      echo "gpu-check: $model $sync $variant ran (${SECONDS}s into the check)"
    done
    grep "prophet: INFO summary comm" "$out/$model-$sync-prophet.log" | head -n 2 || true
    python3 - "$out/$model-$sync" <<'EOP' || status=1
import json, sys
import torch
p = sys.argv[1]
ok = True
def load(v, r):
    return json.load(open(f"{p}-{v}.rank{r}.json")), torch.load(f"{p}-{v}.rank{r}.pt")
(b0, B0), (b1, _), (p0, P0), (p1, _) = load("base", 0), load("base", 1), load("prophet", 0), load("prophet", 1)
for name, x, y in (("without the preload", b0, b1), ("with the preload", p0, p1)):
    same = x["param_sha256"] == y["param_sha256"]
    ok &= same
    print(f'{b0["model"]:12s} {b0["sync"]:9s} ranks bitwise identical {name}: {same}')
worst = 0.0
for a, b in zip(P0, B0):
    a, b = a.double(), b.double()
    tol = 1e-3 * b.abs().max().item() + 1e-5
    d = (a - b).abs().max().item()
    worst = max(worst, d / tol)
    ok &= d <= tol
print(f'{b0["model"]:12s} {b0["sync"]:9s} with vs without the preload: worst max|diff| / tolerance = '
      f'{worst:.3g} ({"within" if worst <= 1 else "OUTSIDE"} 1e-3*max|p|+1e-5); bitwise equal: '
      f'{p0["param_sha256"] == b0["param_sha256"]}')
print(f'{b0["model"]:12s} {b0["sync"]:9s} iteration {b0["median_iter_s"]*1e3:.1f} ms -> '
      f'{p0["median_iter_s"]*1e3:.1f} ms (ratio {p0["median_iter_s"]/b0["median_iter_s"]:.3f})')
sys.exit(0 if ok else 1)
EOP
  done
done
exit $status
