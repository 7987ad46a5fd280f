#!/usr/bin/env bash
# The real-GPU check (needs one NVIDIA GPU, PyTorch with CUDA, torchvision, real NCCL; run from the
# repository root after `cmake -B build && cmake --build build`).
#
# For each model (resnet50, transformer) and each way of synchronising (ddp, hooks), runs
# scripts/gpu/ddp_parity.py under torchrun with 2 ranks sharing one GPU over NCCL's socket transport
# (NCCL_HOSTID differs per rank; NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1), once without the preload and
# once with LD_PRELOAD=build/lib/libprophet.so, then compares every parameter's SHA-256 after the last
# step and prints the iteration-time ratio. Exit status 1 if any parameter differs.
#   scripts/gpu-check.sh [--steps 20] [--gate call|block] [--out DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
steps=20; gate=call; out=gpu-check-out
while [ $# -gt 0 ]; do
  case "$1" in
    --steps) steps=$2; shift 2 ;;
    --gate) gate=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "gpu-check: unknown option $1" >&2; exit 2 ;;
  esac
done
lib=$PWD/build/lib/libprophet.so
[ -f "$lib" ] || { echo "gpu-check: build first ($lib missing)" >&2; exit 1; }
mkdir -p "$out"
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
for model in resnet50 transformer; do
  for sync in ddp hooks; do
    extra=()
    [ "$gate" = block ] && [ "$sync" = ddp ] && extra=(--bucket-view)
    for variant in base prophet; do
      env_pre=()
      [ $variant = prophet ] && env_pre=(LD_PRELOAD="$lib" PROPHET_GATE="$gate" PROPHET_DEBUG=INFO)
      env "${env_pre[@]}" torchrun --standalone --nproc_per_node=2 --no-python "$launcher" \
        scripts/gpu/ddp_parity.py --model $model --sync $sync --steps "$steps" "${extra[@]}" \
        --out "$out/$model-$sync-$variant.json" 2>&1 | tail -5
    done
    python3 - "$out/$model-$sync-base.json" "$out/$model-$sync-prophet.json" <<'EOP' || status=1
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
same = a["param_sha256"] == b["param_sha256"]
print(f'{a["model"]:12s} {a["sync"]:6s} params identical: {same}  '
      f'iteration {a["median_iter_s"]*1e3:.1f} ms -> {b["median_iter_s"]*1e3:.1f} ms '
      f'(ratio {b["median_iter_s"]/a["median_iter_s"]:.3f})')
sys.exit(0 if same else 1)
EOP
  done
done
exit $status
