#!/usr/bin/env python3
"""The preload's cost, two ways (docs/benchmarks.md, "Overhead").

1. Host nanoseconds added per ncclAllReduce call: build/bin/prophet-bench-overhead (1 rank,
   emulated NCCL, so the NCCL work itself is trivial), four columns: direct (no preload),
   disabled (PROPHET_DISABLE=1), observe (PROPHET_GATE=observe: passed through at once, observed)
   and hold-scheduled (the default PROPHET_GATE=hold: held, released as blocks).
2. The preload's CPU time per iteration: the CPU time (user + system, every rank process) of the
   same emulated job without the preload, with it in observe mode (NCCL does exactly the same
   work) and in the default hold mode (NCCL runs the same bytes as fewer, grouped launches),
   divided by iterations x ranks. The three are interleaved run by run; medians reported.

3. With --baseline LIB: the same bench's measured child, run N rounds (--pairs, default 40) of
   direct, baseline, observe, disabled, baseline disabled, default and baseline default (hold, no
   knob), in a new random order each round
   (a fixed order favours whichever variant runs first), all against this build's emulated driver and
   NCCL, so that an older libprophet.so is compared with this one on the same machine at the same
   moment (--baseline-env, default PROPHET_GATE=call: the observe-only mode's older name); both
   are also run with PROPHET_DISABLE=1, the disabled path like for like. Prints
   each variant's median ns per call and the added figures. Used for issue 15's "no worse than
   the +382 ns measured on 2026-11-21" (docs/benchmarks.md, Overhead).

  scripts/overhead.py [--build build] [--runs 5] [--ranks 4] [--iters 60] [--profile resnet50]
  scripts/overhead.py --baseline OLD/libprophet.so [--baseline-env K=V] [--pairs 40]
"""
import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cpu_run(a, extra_env):
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(a.build, "lib", "emu"),
               EMU_NCCL_BW="1Gbit", EMU_NCCL_LATENCY_US="300", **extra_env)
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tf:
        out = tf.name
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run([os.path.join(a.build, "bin", "prophet-emu"), "--ranks", str(a.ranks),
                        "--profile", os.path.join(ROOT, "profiles", a.profile + ".json"),
                        "--mode", "per-tensor", "--iters", str(a.iters), "--scale", "0.5",
                        "--elements-scale", "0.05", "--json", out, "--quiet"],
                       env=env, capture_output=True, text=True, timeout=600)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit(f"overhead: prophet-emu failed: {p.stderr[-1500:]}")
    with open(out) as f:
        calls = json.load(f)["calls_per_iter"]
    os.unlink(out)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu / (a.iters * a.ranks) * 1e6, calls  # us per iteration per rank


def child_ns(a, env_extra):
    """One run of the bench's measured child: median ns per ncclAllReduce call."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROPHET_") and k != "LD_PRELOAD"}
    env.update(LD_LIBRARY_PATH=os.path.join(a.build, "lib", "emu"), **env_extra)
    p = subprocess.run([os.path.join(a.build, "bin", "prophet-bench-overhead"), "--child", "3000"],
                       env=env, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        sys.exit(f"overhead: bench child failed ({env_extra}): {p.stderr[-800:]}")
    return float(p.stdout.split()[0])


def compare(a):
    lib = os.path.join(a.build, "lib", "libprophet.so")
    benv = dict(kv.split("=", 1) for kv in a.baseline_env)
    variants = [("direct (no preload)", {}),
                (f"baseline {a.baseline} {' '.join(a.baseline_env)}", dict(LD_PRELOAD=a.baseline, **benv)),
                ("observe (PROPHET_GATE=observe)", {"LD_PRELOAD": lib, "PROPHET_GATE": "observe"}),
                ("disabled (PROPHET_DISABLE=1)", {"LD_PRELOAD": lib, "PROPHET_DISABLE": "1"}),
                ("baseline, disabled (PROPHET_DISABLE=1)",
                 dict(LD_PRELOAD=a.baseline, PROPHET_DISABLE="1", **benv)),
                ("default (hold, no knob)", {"LD_PRELOAD": lib}),
                ("baseline, default (hold, no knob)", {"LD_PRELOAD": a.baseline})]
    runs = [[] for _ in variants]
    # Each round runs the variants in a new random order (seeded: the same orders every time).
    # A fixed order biases the figures: with --baseline set to this build's own library, a
    # variant run right after another measured 15-65 ns slower than the same library run before
    # it (docs/benchmarks.md, Overhead).
    rng = random.Random(15)
    order = list(range(len(variants)))
    for _ in range(a.pairs):
        rng.shuffle(order)
        for i in order:
            runs[i].append(child_ns(a, variants[i][1]))
    med = [statistics.median(r) for r in runs]
    print(f"host ns per ncclAllReduce call, median of {a.pairs} rounds, each running the variants "
          f"in a random order (each a median over 3000 iterations x 8 calls), this build's "
          f"emulated driver and NCCL\n")
    for (name, _), m in zip(variants, med):
        print(f"   {name:60s} {m:7.0f} ns  added {m - med[0]:+6.0f} ns")
    lower = sum(n < b for b, n in zip(runs[1], runs[2]))
    print(f"\n   observe below the baseline in {lower} of {a.pairs} rounds")
    lower = sum(n < b for b, n in zip(runs[4], runs[3]))
    print(f"   disabled below the baseline's disabled in {lower} of {a.pairs} rounds")
    lower = sum(n < b for b, n in zip(runs[6], runs[5]))
    print(f"   default below the baseline's default in {lower} of {a.pairs} rounds")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--iters", type=int, default=60)
    ap.add_argument("--profile", default="resnet50")
    ap.add_argument("--baseline", help="an older libprophet.so to compare with (section 3)")
    ap.add_argument("--baseline-env", action="append", default=None,
                    help="K=V for the baseline runs (default PROPHET_GATE=call)")
    ap.add_argument("--pairs", type=int, default=40)
    a = ap.parse_args()
    if a.baseline:
        a.baseline_env = a.baseline_env or ["PROPHET_GATE=call"]
        compare(a)
        return

    print("1. host time added per ncclAllReduce call (prophet-bench-overhead --iters 3000)\n")
    b = subprocess.run([os.path.join(a.build, "bin", "prophet-bench-overhead"), "--iters", "3000"],
                       capture_output=True, text=True, timeout=600)
    print(b.stdout.strip() or b.stderr.strip())

    lib = os.path.join(a.build, "lib", "libprophet.so")
    variants = [("without the preload", {}),
                ("observe (PROPHET_GATE=observe)", {"LD_PRELOAD": lib, "PROPHET_GATE": "observe"}),
                ("hold (the default)", {"LD_PRELOAD": lib, "PROPHET_GATE": "hold"})]
    runs = [[] for _ in variants]
    calls = 0
    for _ in range(a.runs):
        for i, (_, env) in enumerate(variants):
            u, calls = cpu_run(a, env)
            runs[i].append(u)
    med = [statistics.median(r) for r in runs]
    print(f"\n2. CPU time per iteration per rank, {a.profile} per-tensor ({calls} calls), {a.ranks} ranks, "
          f"{a.iters} iterations, median of {a.runs} interleaved runs\n")
    for (name, _), m, r in zip(variants, med, runs):
        print(f"   {name:32s} {m:9.0f} us  (runs: {', '.join(f'{x:.0f}' for x in r)})")
    for (name, _), m in zip(variants[1:], med[1:]):
        print(f"   the preload's share, {name.split(' ')[0]:7s}    {m - med[0]:9.0f} us per iteration = "
              f"{(m - med[0]) / calls:.2f} us per call ({(m - med[0]) / med[0] * 100:+.1f}%)")


if __name__ == "__main__":
    main()
