#!/usr/bin/env python3
"""bench.resume: scripts/bench.py --resume keeps each finished row and runs only the rows missing.

A tiny sweep (MobileNet-v2, 2 ranks, a dozen iterations per run) three times over one file:
1. one row: the file holds it, with every column's runs, its settings and its commit;
2. the same row and one more: the first is kept (not run again), only the new one runs;
3. other settings over the same file: refused, nothing run;
and --table-only prints both rows without running anything, says what a run was (its iterations in
all and how many of the last ones the median takes), and --check-best judges them.

  check_resume.py BUILD_DIR
"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def bench(build, resume, modes, *extra):
    cmd = [sys.executable, os.path.join(ROOT, "scripts", "bench.py"), "--build", build,
           "--profiles", "mobilenet_v2", "--ranks", "2", "--bandwidths", "1Gbit", "--modes", modes,
           "--policies", "default,fusion", "--iters", "12", "--warmup", "6", "--fixed-iters", "10",
           "--fixed-warmup", "5", "--resume", resume] + list(extra)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    runs = [l for l in p.stderr.splitlines() if l.startswith("bench: mobilenet_v2 ") and l.endswith(" ms")]
    return p, runs


def fail(msg, p=None):
    print(f"FAIL: {msg}")
    if p is not None:
        print(p.stderr[-3000:])
    sys.exit(1)


def main():
    build = sys.argv[1]
    with tempfile.TemporaryDirectory() as d:
        resume = os.path.join(d, "sweep.json")
        p, runs = bench(build, resume, "per-tensor")
        if p.returncode != 0 or len(runs) != 3:
            fail(f"first sweep: rc {p.returncode}, {len(runs)} runs (want 3)", p)
        with open(resume) as f:
            rows = json.load(f)
        r = rows[0] if len(rows) == 1 else fail(f"{len(rows)} rows kept, want 1")
        if sorted(r["runs_us"]) != ["default", "fusion", "none"] or not r.get("commit") \
                or r["settings"]["fixed_iters"] != 10 or sorted(r["order"][0]) != sorted(r["runs_us"]):
            fail(f"the kept row lacks its runs, commit or settings: {r}")

        p, runs = bench(build, resume, "per-tensor,ddp")
        kept = [l for l in p.stderr.splitlines() if "kept from" in l]
        if p.returncode != 0 or len(kept) != 1 or "per-tensor" not in kept[0]:
            fail(f"second sweep: rc {p.returncode}, kept {kept}", p)
        if len(runs) != 3 or any(" ddp " not in l for l in runs):
            fail(f"second sweep ran {runs}, want the ddp row's 3 runs only", p)
        with open(resume) as f:
            if len(json.load(f)) != 2:
                fail("the file does not hold both rows")

        p, runs = bench(build, resume, "per-tensor", "--repeat", "2")
        if p.returncode == 0 or runs or "other settings" not in p.stderr:
            fail(f"other settings over the same file: rc {p.returncode}, runs {runs}", p)

        p, runs = bench(build, resume, "per-tensor,ddp,horovod", "--table-only", "--check-best", "100")
        table = [l for l in p.stdout.splitlines() if l.startswith("| mobilenet_v2 ")]
        if p.returncode != 0 or runs or len(table) != 2:
            fail(f"--table-only: rc {p.returncode}, runs {runs}, table rows {table}", p)
        # what a run was: prophet-emu ran --warmup then --iters iterations, and the median left the
        # warm-up out of the measured ones again (the tables said "12 iterations, median after 6")
        for want in ("18 iterations a run (prophet-emu --warmup 6 --iters 12), the median of the last 6",
                     "15 iterations a run (prophet-emu --warmup 5 --iters 10), the median of the last 5"):
            if want not in p.stdout:
                fail(f"--table-only: the table does not say '{want}'", p)
        # --check-best judges every row held: a bound no default can meet fails the run
        p, runs = bench(build, resume, "per-tensor,ddp", "--table-only", "--check-best", "0.01")
        if p.returncode != 1 or runs or p.stderr.count("bench: FAIL mobilenet_v2") != 2:
            fail(f"--check-best 0.01: rc {p.returncode}, want 1 and two FAIL rows", p)
    print("ok: a resumed sweep runs only its missing rows; other settings are refused")


if __name__ == "__main__":
    main()
