#!/usr/bin/env bash
# The real-GPU check (needs one NVIDIA GPU, PyTorch with CUDA, torchvision, real NCCL; run from the
# repository root after `cmake -B build && cmake --build build`).
#
# For each model (resnet50, transformer) and each way of synchronising gradients (ddp: DDP's default
# copy-back; ddp-view: gradient_as_bucket_view=True; per-param: `dist.all_reduce(p.grad)` in a loop
# after backward, each followed by `p.grad /= world`; per-param-avg: the same loop with
# op=ReduceOp.AVG and no kernel between calls; hooks: one all_reduce per gradient from a hook;
# graph: the per-param-avg loop captured in a CUDA graph and replayed), runs
# scripts/gpu/ddp_parity.py under torchrun with 2 ranks sharing one GPU over NCCL's socket transport
# (NCCL_HOSTID differs per rank; NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1), without the preload and
# with LD_PRELOAD=build/lib/libprophet.so in the DEFAULT mode (no PROPHET_* variable but
# PROPHET_DEBUG=INFO, which only reports; --gate observe sets PROPHET_GATE=observe instead),
# alternating, --runs times each. --steps (default 60) must exceed the ~25 iterations the preload
# learns before it holds anything; the first trial round ends near step 55, so a steady-state
# figure wants --steps 150 or more.
# Checks, per case:
#   ranks    every parameter bitwise identical on rank 0 and rank 1, in every run (invariant 1:
#            every rank groups the same operations the same way);
#   vs none  the first run with the preload against the first without it, per parameter tensor:
#            max|a - b| <= 1e-3 * max|b| + 1e-5 (a grouped all-reduce may pick another algorithm and
#            channel split than a lone one: not bitwise, within floating-point tolerance);
#   holding  under --gate hold, for the syncs in --expect-grouping (default "ddp ddp-view
#            per-param-avg"), the preload's summary must count blocks of more than one call in
#            every run (held on a real stream and released regrouped); printed for the others.
# Prints the iteration time, no preload -> preload, as the median over the runs of each run's
# median step, over all steps from the third and over the steady steps (the second half).
# Exit status 1 if any check fails or a run fails or hangs.
#   scripts/gpu-check.sh [--steps 60] [--runs 1] [--gate hold|observe] [--out DIR]
#                        [--models "resnet50 transformer"] [--case-timeout 180]
#                        [--syncs "ddp ddp-view per-param per-param-avg hooks graph"]
#                        [--expect-grouping "ddp ddp-view per-param-avg"] [--graph-warmup 3]
# --graph-warmup: eager passes of the loop before the graph case's capture; 40 makes the preload
# learn and hold calls before the capture begins (3 leaves it learning).
# --case-timeout: seconds one torchrun run may take before it counts as hung (a held call that is
# never released shows as a hang, not as a wrong result).
set -euo pipefail
cd "$(dirname "$0")/.."
steps=60; gate=hold; out=gpu-check-out; case_timeout=180; runs=1
expect_grouping="ddp ddp-view per-param-avg"; graph_warmup=3
models="resnet50 transformer"; syncs="ddp ddp-view per-param per-param-avg hooks graph"
while [ $# -gt 0 ]; do
  case "$1" in
    --steps) steps=$2; shift 2 ;;
    --gate) gate=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --syncs) syncs=$2; shift 2 ;;
    --case-timeout) case_timeout=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --expect-grouping) expect_grouping=$2; shift 2 ;;
    --graph-warmup) graph_warmup=$2; shift 2 ;;
    *) echo "gpu-check: unknown option $1" >&2; exit 2 ;;
  esac
done
lib=$PWD/build/lib/libprophet.so
[ -f "$lib" ] || { echo "gpu-check: build first ($lib missing)" >&2; exit 1; }
mkdir -p "$out"
# torchrun's console script may not be on PATH where python3 is a virtual environment's.
run_cmd=(python3 -m torch.distributed.run)
if command -v torchrun >/dev/null; then run_cmd=(torchrun); fi
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
    for run in $(seq 1 "$runs"); do
      for variant in base prophet; do
        env_pre=()
        if [ $variant = prophet ]; then
          env_pre=(LD_PRELOAD="$lib" PROPHET_DEBUG=INFO)
          [ "$gate" = hold ] || env_pre+=(PROPHET_GATE="$gate")
        fi
        tag=$model-$sync-$variant-r$run
        env "${env_pre[@]}" timeout --kill-after=10 "$case_timeout" \
          "${run_cmd[@]}" --standalone --nproc_per_node=2 --no-python "$launcher" \
          scripts/gpu/ddp_parity.py --model $model --sync $sync --steps "$steps" \
          --graph-warmup "$graph_warmup" \
          --out "$out/$tag.json" >"$out/$tag.log" 2>&1 || {
            echo "gpu-check: $tag failed:"; tail -20 "$out/$tag.log"
            status=1; continue 3; }
        echo "gpu-check: $tag ran (${SECONDS}s into the check)"
      done
    done
    grep -h "prophet: .*INFO summary comm" "$out/$model-$sync-prophet-r"*.log | head -n 2 || true
    expect=0
    [ "$gate" = hold ] && [[ " $expect_grouping " == *" $sync "* ]] && expect=1
    python3 - "$out/$model-$sync" "$runs" "$expect" <<'EOP' || status=1
import json, re, statistics, sys
import torch
p, runs, expect = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
ok = True
def meta(v, run, r):
    return json.load(open(f"{p}-{v}-r{run}.rank{r}.json"))
b0 = meta("base", 1, 0)
tag = f'{b0["model"]:12s} {b0["sync"]:13s}'
for run in range(1, runs + 1):
    for v, name in (("base", "without the preload"), ("prophet", "with the preload")):
        same = meta(v, run, 0)["param_sha256"] == meta(v, run, 1)["param_sha256"]
        ok &= same
        print(f'{tag} run {run}: ranks bitwise identical {name}: {same}')
if runs > 1:
    same = all(meta(v, r, 0)["param_sha256"] == meta(v, 1, 0)["param_sha256"]
               for v in ("base", "prophet") for r in range(2, runs + 1))
    print(f'{tag} every run bitwise equal to run 1 of its variant (the job is deterministic): '
          f'{same}')
B0, P0 = torch.load(f"{p}-base-r1.rank0.pt"), torch.load(f"{p}-prophet-r1.rank0.pt")
worst = 0.0
for a, b in zip(P0, B0):
    a, b = a.double(), b.double()
    tol = 1e-3 * b.abs().max().item() + 1e-5
    d = (a - b).abs().max().item()
    worst = max(worst, d / tol)
    ok &= d <= tol
print(f'{tag} with vs without the preload: worst max|diff| / tolerance = {worst:.3g} '
      f'({"within" if worst <= 1 else "OUTSIDE"} 1e-3*max|p|+1e-5); bitwise equal: '
      f'{meta("prophet", 1, 0)["param_sha256"] == b0["param_sha256"]}')
for key, what in (("median_iter_s", "all steps"), ("steady_iter_s", "steady steps")):
    base = [meta("base", r, 0)[key] * 1e3 for r in range(1, runs + 1)]
    pre = [meta("prophet", r, 0)[key] * 1e3 for r in range(1, runs + 1)]
    mb, mp = statistics.median(base), statistics.median(pre)
    first = 3 if key == "median_iter_s" else b0["steady_from"]
    print(f'{tag} iteration, {what} (from step {first}), '
          f'median of {runs} run(s): {mb:.1f} ms -> {mp:.1f} ms (ratio {mp / mb:.3f}; runs '
          f'{", ".join(f"{x:.1f}" for x in base)} -> {", ".join(f"{x:.1f}" for x in pre)})')
if expect:
    # Holding on a real stream: the summary must show blocks of more than one call.
    grouped = []
    for run in range(1, runs + 1):
        log = open(f"{p}-prophet-r{run}.log").read()
        m = re.findall(r"summary comm \d+ rank 0/\d+: .*?blocks>1=(\d+)", log)
        grouped.append(sum(map(int, m)) if m else 0)
    held = all(g > 0 for g in grouped)
    ok &= held
    print(f'{tag} blocks of more than one call under the preload, per run: {grouped} '
          f'({"held and regrouped" if held else "NOTHING GROUPED"})')
sys.exit(0 if ok else 1)
EOP
  done
done
exit $status
