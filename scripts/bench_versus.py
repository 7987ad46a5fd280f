#!/usr/bin/env python3
r"""One job against the same job with more prophet-emu arguments (the extras, run-ahead), their
four columns interleaved in every round: how much of the job's speed-up the variant keeps.

  scripts/bench_versus.py --versus "--loss-every 10 --eval-every 50" [--check-share F]
                          [--json FILE] [--out FILE] BENCH-OPTIONS...

BENCH-OPTIONS are scripts/bench.py's (one --profiles, --ranks, --bandwidths and --modes value
each; --emu-args, --repeat, --iters, --warmup, --load, --build, --timeout as there; --policies is
always `default`). Each round runs, in an order shuffled per round (seeded, so a rerun runs the
same order), the job without the preload and with it at its default knobs, and the variant
(--emu-args plus --versus) without and with it; under --load the busy loops are the same for all
four, with one phase per round. A cell is the median of its runs' medians, as in bench.py.

Why: two bench.py invocations are minutes apart, and on a host that drifts (8 ranks on 2 cores:
the no-preload runs of one MobileNet-v2 cell spread from 253 to 360 ms) their speed-ups cannot be
compared; here both jobs see the same drift. The table gives each job's speed-up and the variant's
share of the job's; below it, the share in each round (the paired figure).

Exit status: 0; 1 when --check-share F is given and the share is below F (0.9: the variant keeps
at least 90% of the speed-up); 2 on a usage error.
"""
import argparse
import copy
import json
import os
import random
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (run_emu, HostLoad, load_phase, loop_story)


def parse():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], add_help=False)
    ap.add_argument("--versus", required=True, help="prophet-emu arguments the variant adds")
    ap.add_argument("--check-share", type=float, default=0.0, metavar="F")
    ap.add_argument("--json", help="the four columns' runs as JSON")
    ap.add_argument("--out", help="Markdown output (default: stdout only)")
    ap.add_argument("-h", "--help", action="store_true")
    mine, rest = ap.parse_known_args()
    if mine.help:
        print(__doc__)
        sys.exit(0)
    sys.argv = ["bench.py", "--policies", "default"] + rest
    a = bench.parse_args()
    for name in ("profiles", "ranks", "bandwidths", "modes"):
        if "," in str(getattr(a, name)):
            sys.exit(f"bench_versus: one --{name} value, not {getattr(a, name)}")
    return mine, a


def main():
    mine, a = parse()
    bench.install_load_cleanup()
    b = copy.copy(a)
    b.emu_args = f"{a.emu_args} {mine.versus}".strip()
    profile, ranks, bw, mode = a.profiles, int(a.ranks), a.bandwidths, a.modes
    cells = [("none", a, None), ("default", a, "default"), ("none+", b, None), ("default+", b, "default")]
    runs = {k: [] for k, _, _ in cells}
    stories = []
    for rep in range(a.repeat):
        order = list(cells)
        random.Random(f"versus/{profile}/{ranks}/{bw}/{mode}/{rep}").shuffle(order)
        phase = bench.load_phase(a, profile, ranks, bw, mode, rep)
        for key, args, pol in order:
            with bench.HostLoad(a.load, a.load_mode, a.load_period, phase):
                med, err = bench.run_emu(args, profile, ranks, bw, mode, pol)
            runs[key].append(med)
            if pol:
                calls = re.search(r"summary comm 0 rank 0/\d+: calls=(\d+)", err)
                stories.append({"column": key, "round": rep, "loop": bench.loop_story(err),
                                "calls": int(calls.group(1)) if calls else None})
            print(f"bench_versus: {profile} n={ranks} {bw} {mode} {key:9s} {med / 1e3:9.2f} ms",
                  file=sys.stderr, flush=True)
    med = {k: statistics.median(v) for k, v in runs.items()}
    s_a, s_b = med["none"] / med["default"], med["none+"] / med["default+"]
    share = s_b / s_a
    paired = [(runs["none+"][i] / runs["default+"][i]) / (runs["none"][i] / runs["default"][i])
              for i in range(a.repeat)]
    host = bench.load_text(a.load, a.load_mode, a.load_period)
    md = [f"`{' '.join(['scripts/bench_versus.py', '--versus', repr(mine.versus)] + sys.argv[1:])}`: "
          f"{profile} {mode}, {ranks} ranks, {bw}, host {host}, {bench.run_text(a.iters, a.warmup)}, "
          f"median of {a.repeat} rounds, the four columns interleaved in each.\n",
          "| job | no preload | default | speed-up | share of the job's speed-up |",
          "|---|---|---|---|---|",
          f"| `{a.emu_args}` | {med['none'] / 1e3:.1f} ms | {med['default'] / 1e3:.1f} ms | {s_a:.2f}x | - |",
          f"| plus `{mine.versus}` | {med['none+'] / 1e3:.1f} ms | {med['default+'] / 1e3:.1f} ms | "
          f"{s_b:.2f}x | {100 * share:.0f}% |",
          "",
          "Share in each round (paired): " + ", ".join(f"{100 * p:.0f}%" for p in paired)
          + f"; median {100 * statistics.median(paired):.0f}%.", ""]
    text = "\n".join(md)
    print(text)
    if mine.out:
        with open(mine.out, "w") as f:
            f.write(text + "\n")
    if mine.json:
        with open(mine.json, "w") as f:
            json.dump({"profile": profile, "ranks": ranks, "bw": bw, "mode": mode, "host": host,
                       "emu_args": a.emu_args, "versus": mine.versus, "runs_us": runs,
                       "median_us": med, "speedup": [s_a, s_b], "share": share,
                       "paired_share": paired, "loop": stories, "commit": bench.build_commit()},
                      f, indent=1)
    if mine.check_share and share < mine.check_share:
        print(f"bench_versus: the variant keeps {100 * share:.0f}% of the speed-up, below "
              f"{100 * mine.check_share:.0f}%", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
