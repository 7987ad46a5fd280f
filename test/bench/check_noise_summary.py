#!/usr/bin/env python3
"""bench.noise_summary: the lines scripts/bench.py prints under a table with a default column,
from rows built so that the answer is known: every cell's runs are 99, 100 and 101 (a coefficient
of variation of exactly 1%), the per-call rows' 'default vs none' are 1.1 and 1.21 (geometric
mean 1.1 x sqrt(1.1) = 1.154) and the already-fused rows' 0.98, 0.98 and 1.00 (geometric mean
0.987, two rows below 0.99x); then rows whose default runs kept a plan that has a column of its
own (fusion), one that has none (optimal-alpha4) or nothing, for the default against its kept
column; then unsettled rows (every preload column the same code), each column against the best
of the others. Runs nothing.

  check_noise_summary.py
"""
import importlib.util
import math
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def fail(msg, lines):
    print(f"FAIL: {msg}")
    print("\n".join(lines))
    sys.exit(1)


def row(mode, speedup):
    return {"mode": mode, "speedup_vs_none": {"default": speedup, "fusion": 1.0},
            "runs_us": {c: [99.0, 100.0, 101.0] for c in ("none", "default", "fusion")}}


def main():
    spec = importlib.util.spec_from_file_location("bench", os.path.join(ROOT, "scripts", "bench.py"))
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    rows = [row("per-tensor", 1.1), row("per-param-sync", 1.21), row("ddp", 0.98),
            row("ddp-view", 0.98), row("horovod", 1.0)]
    lines = bench.noise_summary(rows)
    text = " ".join(lines)
    m = re.search(r"spread by ([0-9.]+)% .*pooled over (\d+) cells.*standard error of about "
                  r"([0-9.]+)% and 'default vs none' of about ([0-9.]+)%", text)
    if not m or m.group(1) != "1.0" or m.group(2) != "15":
        fail("the pooled spread is not 1.0% over 15 cells", lines)
    se_cell = 1.2533 * 0.01 / math.sqrt(3)
    if m.group(3) != f"{100 * se_cell:.1f}" or m.group(4) != f"{100 * math.sqrt(2) * se_cell:.1f}":
        fail(f"standard errors {m.group(3)}% and {m.group(4)}%, want {100 * se_cell:.1f}% and "
             f"{100 * math.sqrt(2) * se_cell:.1f}%", lines)
    want = {"per-call": ("2", f"{1.1 * math.sqrt(1.1):.3f}", "0"),
            "already fused": ("3", f"{(0.98 * 0.98) ** (1 / 3):.3f}", "2")}
    for kind, (n, gm, below) in want.items():
        k = re.search(rf"over the (\d+) {kind} row\(s\).*?geometric mean ([0-9.]+)x.*?(\d+) row\(s\) "
                      rf"below 0.99x", text)
        if not k or k.groups() != (n, gm, below):
            fail(f"{kind}: got {k.groups() if k else None}, want {(n, gm, below)}", lines)
    if bench.noise_summary([row("ddp", 1.0) | {"runs_us": {"none": [1.0]}}]) != []:
        fail("one run per cell: no spread to pool, so no line", lines)
    # the default against the column of the plan it kept: run / that column's median, the median
    # over runs; runs that kept a candidate with no column (or nothing) are left out
    def looped(kept, default_runs):
        r = row("per-tensor", 1.2)
        r["runs_us"]["default"] = default_runs
        r["loop"] = [[f"comm 0 iteration 40: trial round 1: prophet measured 1 us (median of 4 "
                      f"iterations)", f"comm 0 iteration 46: trial round 1: {k} kept (1 us)"]
                     if k else ["comm 0: unsettled"] for k in kept]
        return r
    rows = [looped(["fusion", "fusion", "fusion"], [101.0, 102.0, 110.0]),  # 1.01 1.02 1.10
            looped(["optimal-alpha4", "fusion", None], [120.0, 99.0, 130.0]),  # 0.99 alone
            looped(["optimal-bw2", None, None], [150.0, 150.0, 150.0])]  # no column: left out
    text = " ".join(bench.noise_summary(rows))
    k = re.search(r"plan its loop kept .*?over (\d+) row\(s\) geometric mean ([0-9.]+)x", text)
    if not k or k.groups() != ("2", f"{math.sqrt(1.02 * 0.99):.3f}"):
        fail(f"default vs its kept column: got {k.groups() if k else None}, want "
             f"('2', '{math.sqrt(1.02 * 0.99):.3f}')", [text])
    # run by run, by the plan kept: fusion's runs 1.01, 1.02, 1.10 and 0.99; optimal-alpha4 has no
    # column of its own
    k = re.search(r"by the plan kept .*?fusion 4 run\(s\) geometric mean ([0-9.]+)x", text)
    want = f"{(1.01 * 1.02 * 1.10 * 0.99) ** 0.25:.3f}"
    if not k or k.group(1) != want or "optimal-alpha4" in text.split("by the plan kept")[1]:
        fail(f"by the plan kept: got {k.group(1) if k else None}, want fusion {want}", [text])
    # columns that run the same code: rows whose default runs all kept nothing (unsettled), each
    # preload column against the lowest of the other five; a row that kept a plan is left out
    def unsettled(meds, kept=None):
        r = row("horovod", 1.0)
        r["median_us"] = dict(zip(bench.PRELOAD_COLUMNS, meds))
        r["loop"] = [[f"comm 0 iteration 46: trial round 1: {kept} kept (1 us)"] if kept else []] * 3
        return r
    rows = [unsettled([100, 100, 104, 100, 100, 100]),  # fusion 1.04: above 1.03
            unsettled([100, 100, 100, 100, 102, 100]),  # prophet 1.02: within
            unsettled([100, 100, 110, 100, 100, 100], kept="passthrough")]  # a plan: left out
    text = " ".join(bench.noise_summary(rows))
    k = re.search(r"same code \(the (\d+) row\(s\).*?above 1.03 in (\d+) of (\d+) cells \((\d+)%\)",
                  text)
    if not k or k.groups() != ("2", "1", "12", "8"):
        fail(f"same-code columns: got {k.groups() if k else None}, want ('2', '1', '12', '8')", [text])
    print("ok: the pooled spread, the standard errors, each kind's geometric mean, the default "
          "against its kept column (pooled and by plan) and the same-code columns' misses")


if __name__ == "__main__":
    main()
