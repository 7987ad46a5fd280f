#!/usr/bin/env python3
r"""Benchmarks on the emulated cluster: profiles x ranks x link bandwidth x framework mode, each run
without the preload and with it under each policy, side by side from one run.

Each cell runs build/bin/prophet-emu (real TCP sockets between rank processes, link pacing by the
emulated NCCL) and takes the median iteration time after the warm-up: a run of --iters N and
--warmup W is prophet-emu's W warm-up iterations then its N measured ones, and the median is of
the last N - W (W + N iterations in all; the warm-up is left out twice, by the emulator and again
here, which every table since 2026-11-23 did while saying "N iterations, median after W"). The optimum of the same profile
on the same link (prophet-sim's `optimal`, the MG-WFBP dynamic programme) is the lower bound; every
result is reported as a ratio to it. Writes a Markdown table and an SVG plot.

  scripts/bench.py [--quick] [--out docs/benchmarks.md] [--svg docs/benchmarks.svg]
                   [--profiles resnet50,vgg16] [--ranks 4,8] [--bandwidths 10Gbit,25Gbit]
                   [--modes ddp,per-tensor] [--iters 40] [--warmup 8] [--scale S]
                   [--policies default,passthrough,fusion,buckets,prophet,optimal] [--gate hold]
                   [--repeat N] [--load N [--load-mode bursty --load-period S]]
                   [--check-speedup X] [--check-floor Y]

Columns: `none` is the job without the preload; `default` is the preload with every PROPHET_* knob
at its default (no PROPHET_POLICY: the closed loop tries the candidate plans in agreed trial
iterations and keeps the fastest measured one); every other column sets PROPHET_POLICY to that
planner (the loop is then off). The warm-up left out of each median covers learning the profile
and the loop's first trial round (docs/design.md, "The closed loop"), the same for every column
unless --fixed-iters/--fixed-warmup give the columns that never search shorter runs.

The full sweep of issue 12 (4 profiles x 4 and 8 ranks x 2 links x 5 patterns x 7 columns x 3 runs)
takes many hours on a 2-core machine; --resume keeps each finished row in a file and takes the
sweep up where it stopped:

  scripts/bench.sh --modes per-tensor,per-param-sync,ddp,ddp-view,horovod --repeat 3 \
                   --fixed-iters 80 --fixed-warmup 40 --resume docs/sweep.json \
                   --check-best 1.03 --out docs/sweep.md

Under a table with a default column and repeated runs, the noise: the runs of one cell spread by a
coefficient of variation pooled over every cell, the standard error that gives a cell and the
'default vs none' ratio, and that ratio pooled over the rows of each kind of pattern (per-call:
per-tensor, per-param-sync; already fused: DDP, its bucket view, Horovod) as a geometric mean with
a 95% interval; the default's runs against the column of the plan each run's loop kept (the
loop's own cost, its choice set aside), pooled and run by run by the plan kept; and, over the rows
in which no plan is agreed (every preload column the same code), how often a column reads more
than 3% above the best of the others (what noise alone does to a bound on the best column). A
bound of 0.99x on one row means little when the ratio's own standard error is 2-3%; pooled over
the 12 fused rows of docs/sweep/issue12.json the interval was 0.974-0.998x.

A busy host, as shared clusters have (data loaders, checkpoint writers, other jobs): --load N
runs N busy loops (`sh -c 'while :; do :; done'`: no output, about 1 MB each) during every run of
every column, started just before each run in a process group of their own and killed with it
after, also on an error, a timeout, Ctrl-C or SIGTERM (and by the kernel if the bench itself is
killed). --load-mode bursty stops and continues them (SIGSTOP/SIGCONT) every --load-period
seconds; each round of runs draws the cycle's phase at its runs' starts (seeded by the row and
the round, like the order), the same for every column of the round. The table's header and every
row say the host ("host: quiet", "host: 2 busy loops, bursty, 3 s on / 3 s off"), and a --resume
file measured under another load is refused.
"""
import argparse
import atexit
import ctypes
import datetime
import json
import math
import os
import platform
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--quick", action="store_true", help="a short run (CI): one profile, 4 ranks, one link")
    ap.add_argument("--out", help="Markdown output (default: stdout only)")
    ap.add_argument("--svg", help="SVG plot output")
    ap.add_argument("--json", help="raw results as JSON")
    ap.add_argument("--profiles", default="resnet50,vgg16,mobilenet_v2,bert_base")
    ap.add_argument("--ranks", default="4,8")
    ap.add_argument("--bandwidths", default="1Gbit,2.5Gbit")
    ap.add_argument("--modes", default=None, help="default ddp,per-tensor,horovod (--quick: per-tensor,ddp)")
    ap.add_argument("--policies", default="default,passthrough,fusion,buckets,prophet,optimal",
                    help="columns besides no preload: default (no PROPHET_POLICY) or a PROPHET_POLICY name")
    ap.add_argument("--gate", default="hold", choices=["hold", "observe"])
    ap.add_argument("--baseline", metavar="SO",
                    help="one more column: another build's libprophet.so (e.g. an older commit built in a "
                         "worktree), run on this build's emulator, interleaved with the others")
    ap.add_argument("--baseline-env", action="append", default=[], metavar="K=V",
                    help="environment of the --baseline column (repeatable), e.g. PROPHET_GATE=block")
    ap.add_argument("--baseline-label", default="baseline", help="the --baseline column's heading")
    ap.add_argument("--latency-us", type=float, default=0.0,
                    help="emulated per-operation latency in us (EMU_NCCL_LATENCY_US: slept once per "
                         "operation or fused group, on top of the emulated ring's own costs), also "
                         "the optimum's alpha. Default 0, what every table in docs/benchmarks.md ran "
                         "with (until 2026-11-24 the bench passed '300.0', which the emulator "
                         "ignored); 300 models a socket ring of about 8 hops")
    ap.add_argument("--iters", type=int, default=170,
                    help="prophet-emu's measured iterations of a run, after its --warmup ones "
                         "(default 170: 300 iterations in all)")
    ap.add_argument("--warmup", type=int, default=130,
                    help="prophet-emu's warm-up iterations, and as many of the measured ones left out "
                         "of the median too (learning, measuring, the first trial round): the median "
                         "is of the last --iters minus --warmup (default 40)")
    ap.add_argument("--emu-args", default="--scale 0.5 --elements-scale 0.05",
                    help="extra prophet-emu arguments (time and size scales: 2 cores host many ranks)")
    ap.add_argument("--fixed-iters", type=int, default=None, metavar="N",
                    help="iterations of a column whose plan never searches (no preload and the "
                         "PROPHET_POLICY columns; default --iters): they settle once the first plan "
                         "is agreed, so a sweep can give them shorter runs")
    ap.add_argument("--fixed-warmup", type=int, default=None, metavar="W",
                    help="warm-up of those columns (default --warmup)")
    ap.add_argument("--resume", metavar="FILE",
                    help="keep every finished row in FILE (JSON, rewritten after each row) and skip the "
                         "rows FILE already holds with the same settings: a long sweep can be stopped "
                         "and taken up again, and its rows come from one table")
    ap.add_argument("--table-only", action="store_true",
                    help="with --resume: the table of the rows FILE holds; run nothing")
    ap.add_argument("--timeout", type=int, default=900,
                    help="seconds a run may last (prophet-emu --timeout; default 900). A default run "
                         "of BERT-base at 8 ranks is 300 iterations of about 1 s on 2 cores: "
                         "prophet-emu's own 300 s killed it")
    ap.add_argument("--repeat", type=int, default=1,
                    help="runs per column, interleaved (one run of every column per round, --order); the cell is the "
                         "median of the runs' medians (a shared, loaded machine)")
    ap.add_argument("--order", choices=["shuffled", "fixed"], default="shuffled",
                    help="the columns' order within each round of runs: shuffled (default; seeded by "
                         "the row and the round, so a rerun runs the same order) or fixed (none, "
                         "then the policies as given). A fixed order puts each column after the "
                         "same neighbour every time, and a column after the long default run "
                         "measured up to 6%% slower than after a short one")
    ap.add_argument("--load", type=int, default=0, metavar="N",
                    help="a busy host: N busy-loop processes (pure CPU, no output) running during "
                         "every run of every column, started before each run and killed after it "
                         "(also on an error, a timeout or Ctrl-C); default 0, a quiet host. The "
                         "table and every row say it, and a --resume file of another load is refused")
    ap.add_argument("--load-mode", choices=["constant", "bursty"], default="constant",
                    help="constant (default): the loops spin throughout; bursty: they are stopped "
                         "and continued (SIGSTOP/SIGCONT) every --load-period seconds, as data "
                         "loaders and checkpoint writers do, the cycle's phase at the runs' start "
                         "drawn per round of runs (seeded by the row and the round) and the same "
                         "for every column of the round")
    ap.add_argument("--load-period", type=float, default=3.0, metavar="S",
                    help="seconds on, then as many off, of --load-mode bursty (default 3)")
    ap.add_argument("--check-speedup", type=float, default=0.0, metavar="X",
                    help="exit 1 unless the default column is at least X times as fast as no preload "
                         "in every per-tensor row (a pattern the preload can help)")
    ap.add_argument("--check-best", type=float, default=0.0, metavar="F",
                    help="exit 1 unless the default column is at most F times the best PROPHET_POLICY "
                         "column's time in every row (issue 12: 1.03)")
    ap.add_argument("--check-floor", type=float, default=0.0, metavar="Y",
                    help="exit 1 unless the default column is at least Y times as fast as no preload "
                         "in every row of another mode (a pattern it cannot help: DDP, Horovod)")
    a = ap.parse_args()
    if a.quick:
        a.profiles, a.ranks, a.bandwidths = "resnet50", "4", "1Gbit"
        a.modes, a.policies = a.modes or "per-tensor,ddp", "default"
        a.repeat = max(a.repeat, 3)
        # 180 iterations, the median of the last 40 (140-179): the 4-rank ResNet-50 loop's first
        # round ends near iteration 135 (its first pass, the leader's duel and the runner-up's);
        # a job that agrees no plan (Horovod) or keeps passthrough early (DDP) needs 160 (120-159)
        a.iters, a.warmup = (110, 70) if "per-tensor" in (a.modes or "per-tensor") else (100, 60)
    a.modes = a.modes or "ddp,per-tensor,horovod"
    if a.table_only and not a.resume:
        sys.exit("bench: --table-only needs --resume FILE")
    if a.load < 0 or not a.load_period > 0:
        sys.exit("bench: --load must be 0 or more and --load-period above 0")
    if a.load_mode == "bursty" and a.load == 0:
        sys.exit("bench: --load-mode bursty needs --load N (N busy loops to stop and continue)")
    a.fixed_iters = a.iters if a.fixed_iters is None else a.fixed_iters
    a.fixed_warmup = a.warmup if a.fixed_warmup is None else a.fixed_warmup
    if not 0 <= a.fixed_warmup < a.fixed_iters or not 0 <= a.warmup < a.iters:
        sys.exit("bench: a warm-up must be shorter than its run (--warmup < --iters, "
                 "--fixed-warmup < --fixed-iters)")
    return a


# A busy loop: pure CPU in the shell's own builtins (no fork, no output, about 1 MB of memory).
SPINNER = ["/bin/sh", "-c", "while :; do :; done"]
try:
    _LIBC = ctypes.CDLL(None, use_errno=True)  # prctl, loaded before any fork
except OSError:
    _LIBC = None
PR_SET_PDEATHSIG = 1


def load_text(n, mode="constant", period=3.0):
    """The host's load as a table's header and a row say it."""
    if n <= 0:
        return "quiet"
    text = f"{n} busy loop{'' if n == 1 else 's'}, {mode}"
    return text + (f", {period:g} s on / {period:g} s off" if mode == "bursty" else "")


def load_key(a):
    """The load as part of a row's settings (None: a quiet host, the key rows had before --load)."""
    if a.load <= 0:
        return None
    key = {"procs": a.load, "mode": a.load_mode}
    if a.load_mode == "bursty":
        key["period_s"] = a.load_period
    return key


def load_phase(a, profile, ranks, bw, mode, rep):
    """Where in the bursty cycle (0 to 2 x period s; below the period: on) a round's runs start:
    drawn per round, seeded by the row and the round like the order, the same for every column."""
    if a.load <= 0 or a.load_mode != "bursty":
        return None
    return round(random.Random(f"load/{profile}/{ranks}/{bw}/{mode}/{rep}").uniform(0, 2 * a.load_period), 3)


class HostLoad:
    """n busy loops in a process group of their own, for the length of a `with` block: started on
    entry, killed (SIGKILL to the group) and reaped on exit, whatever ends the block. Bursty: a
    thread stops and continues the group (SIGSTOP/SIGCONT) every `period` s, `phase` s into the
    on/off cycle at the start (below `period`: on). Each loop gets SIGKILL from the kernel should
    this process die without cleaning up (PR_SET_PDEATHSIG)."""
    active = []  # loads running now, for stop_all

    def __init__(self, n, mode="constant", period=3.0, phase=0.0):
        self.n, self.mode, self.period, self.phase = n, mode, period, phase or 0.0
        self.procs, self.pgid, self._thread, self._quit = [], None, None, threading.Event()

    def pids(self):
        return [p.pid for p in self.procs]

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def _child_setup(self, parent):
        def setup():  # in the child, between fork and exec
            if _LIBC is not None:
                _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            if os.getppid() != parent:  # the bench died before prctl took
                os._exit(1)
            os.setpgid(0, self.pgid or 0)
        return setup

    def start(self):
        if self.n <= 0:
            return
        HostLoad.active.append(self)
        try:
            for _ in range(self.n):
                p = subprocess.Popen(SPINNER, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, close_fds=True,
                                     preexec_fn=self._child_setup(os.getpid()))
                self.procs.append(p)
                self.pgid = self.pgid or p.pid
            if self.mode == "bursty":
                self._thread = threading.Thread(target=self._cycle, args=(time.monotonic(),), daemon=True)
                self._thread.start()
        except BaseException:
            self.stop()
            raise

    def _signal(self, sig):
        try:
            os.killpg(self.pgid, sig)
        except ProcessLookupError:
            pass

    def _cycle(self, t0):
        """On for `period` s, off for `period` s, from `phase` s into the cycle at t0; the
        boundaries are computed from t0, so a late wake-up does not shift the next ones."""
        k = int(self.phase // self.period)  # the half-cycle the runs start in: even = on
        while True:
            self._signal(signal.SIGCONT if k % 2 == 0 else signal.SIGSTOP)
            delay = t0 + (k + 1) * self.period - self.phase - time.monotonic()
            if self._quit.wait(max(0.0, delay)):
                return
            k += 1

    def stop(self):
        self._quit.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self.pgid is not None:
            self._signal(signal.SIGKILL)  # a stopped loop dies of SIGKILL too
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        self.procs, self.pgid = [], None
        if self in HostLoad.active:
            HostLoad.active.remove(self)

    @staticmethod
    def stop_all():
        for load in list(HostLoad.active):
            load.stop()


def _exit_on_signal(sig, frame):
    # SIGTERM/SIGHUP leave through SystemExit, so that every `with HostLoad` block stops its loops
    sys.exit(128 + sig)


def install_load_cleanup():
    """Stop every busy loop at exit, and on SIGTERM/SIGHUP (Ctrl-C's KeyboardInterrupt unwinds the
    `with` blocks already)."""
    atexit.register(HostLoad.stop_all)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _exit_on_signal)


def run_emu(a, profile, ranks, bw, mode, policy):
    """One prophet-emu run; policy None = no preload. Returns (median_us, stderr tail)."""
    emu = os.path.join(a.build, "bin", "prophet-emu")
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.path.join(a.build, "lib", "emu")
    env["EMU_NCCL_BW"] = bw
    env["EMU_NCCL_LATENCY_US"] = f"{a.latency_us:g}"
    gate = a.gate  # hold (the default) is exact in every mode
    for k in [k for k in env if k.startswith("PROPHET_")]:
        del env[k]  # the caller's knobs must not leak into a column
    if policy == "baseline":
        env["LD_PRELOAD"] = os.path.abspath(a.baseline)
        env.update(kv.split("=", 1) for kv in a.baseline_env)
        env["PROPHET_DEBUG"] = "INFO"
    elif policy is not None:
        env["LD_PRELOAD"] = os.path.join(a.build, "lib", "libprophet.so")
        if policy != "default":
            env["PROPHET_POLICY"] = policy
        env["PROPHET_GATE"] = gate
        # every other PROPHET_* knob at its default (PROPHET_DEBUG only reports)
        env["PROPHET_DEBUG"] = "INFO"
    iters, warmup = (a.iters, a.warmup) if policy in ("default", "baseline") else (a.fixed_iters, a.fixed_warmup)
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tf:
        out = tf.name
    cmd = [emu, "--ranks", str(ranks), "--profile", os.path.join(ROOT, "profiles", profile + ".json"),
           "--mode", "ddp" if mode == "ddp-view" else mode, "--iters", str(iters), "--warmup", str(warmup), "--wait", "all",
           "--json", out, "--quiet", "--timeout", str(a.timeout)] + a.emu_args.split()
    if mode == "ddp-view":
        cmd.append("--bucket-view")  # DDP with gradient_as_bucket_view=True
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=a.timeout + 60)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} (policy {policy}) failed rc={p.returncode}:\n{p.stderr[-2000:]}")
    ignored = [l for l in p.stderr.splitlines() if ": ignoring " in l and l.startswith("emu-")]
    if ignored:  # a setting the emulator did not take: the run measured another experiment
        raise RuntimeError(f"{' '.join(cmd)}: {ignored[0]}")
    with open(out) as f:
        res = json.load(f)
    os.unlink(out)
    if len(res["iteration_us"]) != iters:  # run_text's account of a run
        raise RuntimeError(f"{' '.join(cmd)}: {len(res['iteration_us'])} measured iterations, want {iters}")
    its = res["iteration_us"][warmup:] or res["iteration_us"]
    if policy not in (None, "baseline") and gate == "hold" and policy != "passthrough" and "plan v" not in p.stderr:
        print(f"bench: warning: no plan agreed for {profile}/{mode}/{policy}", file=sys.stderr)
    return statistics.median(its), p.stderr


def loop_story(stderr):
    """The closed loop's choices in one run (its PROPHET_DEBUG=INFO lines), each once: each
    trial's figure, the plan kept and from which iteration (the kept plan's line recurs at every
    check; the first is kept), and the drifts that started a round again."""
    seen, story = set(), []
    for line in stderr.splitlines():
        if (": trial round " in line and (" kept (" in line or " measured " in line)) \
                or "drifted since the choice" in line:
            text = line.split(" INFO ", 1)[-1]
            key = re.sub(r"iteration \d+: ", "", text)
            if key not in seen:
                seen.add(key)
                story.append(text)
    return story


def scaled_profile(a, profile):
    """The profile as prophet-emu runs it under --scale/--elements-scale, for prophet-sim."""
    words = a.emu_args.split()
    def opt(name, default):
        return float(words[words.index(name) + 1]) if name in words else default
    ts, es = opt("--scale", 1.0), opt("--elements-scale", 1.0)
    with open(os.path.join(ROOT, "profiles", profile + ".json")) as f:
        d = json.load(f)
    for t in d["tensors"]:
        t["ready_us"] *= ts
        t["elements"] = max(1, round(t["elements"] * es))
        t["bytes"] = t["elements"] * 4
    d["forward_us"] *= ts
    d["backward_us"] *= ts
    fd, path = tempfile.mkstemp(suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(d, f)
    return path


def optimum_us(a, profile, ranks, bw):
    sim = os.path.join(a.build, "bin", "prophet-sim")
    prof = scaled_profile(a, profile)
    p = subprocess.run([sim, "--profile", prof,
                        "--ranks", str(ranks), "--bandwidth", bw, "--alpha", f"{a.latency_us}us", "--json"]
                       + a.sim_args, capture_output=True, text=True, timeout=120)
    os.unlink(prof)
    if p.returncode != 0:
        raise RuntimeError(p.stderr)
    return json.loads(p.stdout)["policies"]["optimal"]["iteration_us"]


def svg_plot(rows, policies, path):
    """Grouped bars: ratio to the optimum for each cell and each column."""
    cols = ["none"] + policies
    colors = ["#888888", "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948"]
    W, H, left, top, bottom = 140 + 70 * len(rows) * 0 + 26 * len(cols) * len(rows) + 20, 360, 60, 30, 110
    ymax = max([1.05] + [r["ratios"][c] for r in rows for c in cols if r["ratios"].get(c)]) * 1.05
    sy = lambda v: top + (H - top - bottom) * (1 - v / ymax)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="10">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{left}" y="16" font-size="12">Iteration time / optimum (lower is better; 1.0 = MG-WFBP optimum)</text>']
    step = 0.5 if ymax <= 4 else 1.0 if ymax <= 8 else 2.0
    for t in [i * step for i in range(int(ymax / step) + 1)]:
        if t <= ymax:
            out.append(f'<line x1="{left}" x2="{W-10}" y1="{sy(t):.1f}" y2="{sy(t):.1f}" stroke="#ddd"/>'
                       f'<text x="{left-6}" y="{sy(t)+3:.1f}" text-anchor="end">{t:.1f}</text>')
    x = left + 10
    for r in rows:
        x0 = x
        for i, c in enumerate(cols):
            v = r["ratios"].get(c)
            if v:
                out.append(f'<rect x="{x}" y="{sy(v):.1f}" width="20" height="{sy(0)-sy(v):.1f}" fill="{colors[i % len(colors)]}"><title>{c}: {v:.3f}</title></rect>')
            x += 22
        label = f'{r["profile"]} {r["mode"]} n={r["ranks"]} {r["bw"]}'
        cx = (x0 + x) / 2
        out.append(f'<text transform="translate({cx:.0f},{sy(0)+8:.0f}) rotate(40)" font-size="9">{label}</text>')
        x += 14
    for i, c in enumerate(cols):
        out.append(f'<rect x="{left + 110*i}" y="{H-16}" width="10" height="10" fill="{colors[i % len(colors)]}"/>'
                   f'<text x="{left + 110*i + 14}" y="{H-7}">{"no preload" if c == "none" else c}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def row_optimum(a, profile, ranks, bw):
    try:
        return optimum_us(a, profile, ranks, bw)
    except Exception as e:  # the simulator's model of the emulator is a yardstick only
        print(f"bench: no optimum for {profile}/{ranks}/{bw}: {e}", file=sys.stderr)
        return 0.0


def run_row(a, profile, ranks, bw, mode, opt, policies):
    """One row: every column run a.repeat times, interleaved; each cell the median of its runs."""
    r = {"profile": profile, "ranks": ranks, "bw": bw, "mode": mode, "optimum_us": opt or None,
         "median_us": {}, "runs_us": {}, "ratios": {}, "started": utc_now(),
         "host": load_text(a.load, a.load_mode, a.load_period)}
    for rep in range(a.repeat):
        order = [None] + policies
        if a.order == "shuffled":
            random.Random(f"{profile}/{ranks}/{bw}/{mode}/{rep}").shuffle(order)
        r.setdefault("order", []).append([pol or "none" for pol in order])
        phase = load_phase(a, profile, ranks, bw, mode, rep)
        if phase is not None:
            r.setdefault("load_phase_s", []).append(phase)
        for pol in order:
            with HostLoad(a.load, a.load_mode, a.load_period, phase):  # the same for every column
                med, err = run_emu(a, profile, ranks, bw, mode, pol)
            key = pol or "none"
            r["runs_us"].setdefault(key, []).append(med)
            if pol == "default":
                r.setdefault("loop", []).append(loop_story(err))
            print(f"bench: {profile:12s} n={ranks} {bw:>8s} {mode:10s} {key:12s} {med/1e3:9.2f} ms",
                  file=sys.stderr, flush=True)
    r["finished"] = utc_now()
    for key, meds in r["runs_us"].items():
        r["median_us"][key] = statistics.median(meds)
    base = r["median_us"]["none"]
    lb = opt if opt else min(r["median_us"].values())
    for k, v in r["median_us"].items():
        r["ratios"][k] = v / lb
    r["speedup_vs_none"] = {k: base / v for k, v in r["median_us"].items()}
    fixed = [k for k in r["median_us"] if k not in ("none", "default", "baseline")]
    if "default" in r["median_us"] and fixed:
        best = min(fixed, key=lambda k: r["median_us"][k])
        r["best_policy"] = best
        r["default_vs_best"] = r["median_us"]["default"] / r["median_us"][best]
    return r


def run_text(iters, warmup):
    """What a run of --iters/--warmup is: prophet-emu runs warmup + iters iterations and reports
    the last iters; the median leaves out warmup of those again."""
    return (f"{warmup + iters} iterations a run (prophet-emu --warmup {warmup} --iters {iters}), "
            f"the median of the last {iters - warmup}")


def utc_now():
    return f"{datetime.datetime.utcnow():%Y-%m-%d %H:%M}"


def build_commit():
    """The commit the measured build comes from (a row records it: a resumed sweep may span commits)."""
    p = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"], capture_output=True, text=True)
    return p.stdout.strip() or "unknown"


def settings_key(a, policies):
    """What a row's figures depend on besides its own profile, ranks, link and mode."""
    return {"columns": ["none"] + policies, "gate": a.gate, "latency_us": a.latency_us,
            "iters": a.iters, "warmup": a.warmup, "fixed_iters": a.fixed_iters,
            "fixed_warmup": a.fixed_warmup, "emu_args": a.emu_args, "repeat": a.repeat,
            "baseline": a.baseline, "baseline_env": a.baseline_env, "order": a.order,
            **({"load": load_key(a)} if load_key(a) else {})}  # absent: quiet, as before --load


def load_resume(path, key):
    """Rows of an earlier run of the same sweep, by (profile, ranks, link, mode)."""
    if not path or not os.path.exists(path):
        return {}
    with open(path) as f:
        rows = json.load(f)
    done = {}
    for r in rows:
        if r.get("settings") != key:
            was, now = (r.get("settings") or {}).get("load"), key.get("load")
            host = (f"; its host: {r.get('host', 'quiet')}, this sweep's: "
                    f"{now and load_text(now['procs'], now['mode'], now.get('period_s', 0)) or 'quiet'}"
                    if was != now else "")  # rows of two loads never share a table
            sys.exit(f"bench: {path} holds a row of other settings ({r['profile']} n={r['ranks']} "
                     f"{r['bw']} {r['mode']}{host}); use another --resume file")
        done[(r["profile"], r["ranks"], r["bw"], r["mode"])] = r
    return done


def save_resume(path, done):
    if not path:
        return
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(list(done.values()), f, indent=1)
    os.replace(tmp, path)


def main():
    a = parse_args()
    install_load_cleanup()
    a.sim_args = []
    policies = [p for p in a.policies.split(",") if p]
    if a.baseline:
        if not os.path.exists(a.baseline):
            sys.exit(f"bench: --baseline {a.baseline}: no such file")
        policies.append("baseline")
    key = settings_key(a, policies)
    done = load_resume(a.resume, key)
    commit = build_commit()
    rows = []
    for profile in a.profiles.split(","):
        for ranks in [int(r) for r in a.ranks.split(",")]:
            for bw in a.bandwidths.split(","):
                opt = None
                for mode in a.modes.split(","):
                    r = done.get((profile, ranks, bw, mode))
                    if r is None and a.table_only:
                        continue
                    if r is None:
                        if opt is None:
                            opt = row_optimum(a, profile, ranks, bw)
                        r = run_row(a, profile, ranks, bw, mode, opt, policies)
                        r["settings"], r["commit"] = key, commit
                        done[(profile, ranks, bw, mode)] = r
                        save_resume(a.resume, done)
                    else:
                        print(f"bench: {profile} n={ranks} {bw} {mode}: kept from {a.resume} "
                              f"({r['started']} - {r['finished']} UTC, {r['commit']})", file=sys.stderr)
                    rows.append(r)
    cols = ["none"] + policies
    md = []
    md.append(f"Generated {datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC on {platform.node()} "
              f"({os.cpu_count()} CPUs) by `{' '.join(['scripts/bench.sh'] + sys.argv[1:])}`; "
              f"gate `{a.gate}`, emulated latency {a.latency_us:g} us, "
              f"host: {load_text(a.load, a.load_mode, a.load_period)}"
              f"{' (the phase drawn at random per round of runs, the same for every column)' if a.load and a.load_mode == 'bursty' else ''}, "
              f"{run_text(a.iters, a.warmup)}"
              f"{f', median of {a.repeat} interleaved runs per cell ({a.order} order)' if a.repeat > 1 else ''}. Every other PROPHET_* knob "
              f"at its default; `default` sets none (the closed loop), each other column sets PROPHET_POLICY; "
              f"`PROPHET_GATE={a.gate}` is "
              f"{'the default' if a.gate == 'hold' else 'not the default (observe mode never holds a call, so it cannot regroup)'}"
              f"{f'; `{a.baseline_label}` is LD_PRELOAD={a.baseline} with ' + (' '.join(a.baseline_env) or 'no knob') if a.baseline else ''}.\n")
    md.append("Iteration time in ms, and in brackets the ratio to the optimum (MG-WFBP lower bound from "
              "`prophet-sim` for the same profile, ranks, bandwidth and latency).\n")
    if a.fixed_iters != a.iters or a.fixed_warmup != a.warmup:
        md.append(f"The columns whose plan never searches (no preload, each PROPHET_POLICY): "
                  f"{run_text(a.fixed_iters, a.fixed_warmup)}.\n")
    heading = {"none": "no preload", "baseline": a.baseline_label}
    verdicts = "default" in policies
    extra = ["default vs none", "default vs best policy"] if verdicts else []
    if a.resume:  # the rows of a resumed sweep come from several runs: when and from what
        extra.append("measured (UTC, commit)")
    md.append("| profile | mode | ranks | link | optimum | " + " | ".join([heading.get(c, c) for c in cols] + extra) + " |")
    md.append("|---|---|---|---|---|" + "---|" * (len(cols) + len(extra)))
    for r in rows:
        opt = f'{r["optimum_us"]/1e3:.1f}' if r["optimum_us"] else "-"
        cells = [f'{r["median_us"][c]/1e3:.1f} ({r["ratios"][c]:.2f})' for c in cols]
        if verdicts:
            cells.append(f'{r["speedup_vs_none"]["default"]:.2f}x')
            cells.append(f'{r["default_vs_best"]:.3f} ({r["best_policy"]})' if "best_policy" in r else "-")
        if a.resume:
            cells.append(f'{r["started"]} - {r["finished"][11:]}, {r["commit"]}')
        md.append(f'| {r["profile"]} | {r["mode"]} | {r["ranks"]} | {r["bw"]} | {opt} | ' + " | ".join(cells) + " |")
    if verdicts:
        md.append("")
        md.extend(noise_summary(rows))
    text = "\n".join(md) + "\n"
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    if a.svg:
        svg_plot(rows, policies, a.svg)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    failed = (a.check_speedup > 0 or a.check_floor > 0) and "default" not in policies
    if failed:
        print("bench: FAIL: a check needs the default column (--policies default,...)", file=sys.stderr)
    # a check that no row is subject to is a failure, not a silent pass
    helped = [r for r in rows if r["mode"] == "per-tensor"]
    for bound, subject, what in ((a.check_speedup, helped, "per-tensor"),
                                 (a.check_floor, [r for r in rows if r not in helped], "other-mode")):
        if bound > 0 and not subject:
            print(f"bench: FAIL: a check on {what} rows, and no such row was run (--modes)", file=sys.stderr)
            failed = True
    for r in rows:
        s = r["speedup_vs_none"].get("default")
        bound = a.check_speedup if r["mode"] == "per-tensor" else a.check_floor
        if s is None or bound <= 0:
            continue
        verdict = "ok" if s >= bound else "FAIL"
        failed |= s < bound
        print(f'bench: {verdict} {r["profile"]} {r["mode"]} n={r["ranks"]} {r["bw"]}: default '
              f'{s:.2f}x as fast as no preload (bound {bound})', file=sys.stderr)
    failed |= check_best(a, rows)
    if failed:
        sys.exit(1)


# the patterns whose calls reach NCCL one tensor at a time, and those that fuse them already
PATTERN_KINDS = (("per-call", ("per-tensor", "per-param-sync")),
                 ("already fused", ("ddp", "ddp-view", "horovod")))


def noise_summary(rows):
    """Lines under the table: how far apart the runs of one cell are (pooled over every cell),
    what that makes the standard error of a cell and of 'default vs none', and 'default vs none'
    pooled over the rows of each kind of pattern (geometric mean; 95% interval from the rows'
    own spread, so it holds the noise and the rows' real differences alike), and the default
    against the column of the plan its loop kept."""
    cells = [v for r in rows for v in r.get("runs_us", {}).values() if len(v) > 1]
    if not cells:
        return []
    cv = math.sqrt(statistics.mean((statistics.stdev(v) / statistics.mean(v)) ** 2 for v in cells))
    n = statistics.median(len(v) for v in cells)
    se_cell = 1.2533 * cv / math.sqrt(n)  # the median of n normal runs: sqrt(pi/2) x the mean's
    se_ratio = math.sqrt(2) * se_cell
    below = 0.5 * (1 + math.erf(-0.01 / se_ratio / math.sqrt(2)))
    out = [f"Noise: the runs of one cell spread by {100 * cv:.1f}% (coefficient of variation, pooled "
           f"over {len(cells)} cells), so a cell (the median of {n:g} runs) has a standard error of "
           f"about {100 * se_cell:.1f}% and 'default vs none' of about {100 * se_ratio:.1f}%: a default "
           f"exactly as fast as no preload would read below 0.99x in about {100 * below:.0f}% of rows.\n"]
    for kind, modes in PATTERN_KINDS:
        sub = [r["speedup_vs_none"]["default"] for r in rows
               if r["mode"] in modes and "default" in r.get("speedup_vs_none", {})]
        if not sub:
            continue
        out.append(f"Default vs none over the {len(sub)} {kind} row(s) ({', '.join(modes)}): "
                   f"{geometric_mean(sub)}; {sum(x < 0.99 for x in sub)} row(s) below 0.99x.\n")
    same = same_code_ratios(rows)
    if same:
        miss = sum(x > SAME_CODE_BOUND for x in same)
        out.append(f"Columns that run the same code (the {len(same) // len(PRELOAD_COLUMNS)} row(s) "
                   f"in which no default run kept a plan: the comm never settled, no plan is agreed "
                   f"under any policy, and the {len(PRELOAD_COLUMNS)} preload columns are one "
                   f"preload): a column against the best of the other {len(PRELOAD_COLUMNS) - 1} "
                   f"reads above {SAME_CODE_BOUND} in {miss} of {len(same)} cells "
                   f"({100 * miss / len(same):.0f}%): a default exactly as fast as the best plan "
                   f"would miss a {100 * (SAME_CODE_BOUND - 1):.0f}% bound on the best column in "
                   f"about that share of rows by noise alone.\n")
    vs_kept = [v for v in (default_vs_kept(r) for r in rows) if v is not None]
    if vs_kept:
        out.append(f"The default against the column of the plan its loop kept (the same plan: the "
                   f"choice set aside, what is left is the loop's own cost, its trial and sampled "
                   f"iterations): over {len(vs_kept)} row(s) {geometric_mean(vs_kept)} (above 1: "
                   f"slower).\n")
    by_kept = runs_vs_kept(rows)
    if by_kept:
        parts = [f"{k} {len(v)} run(s) {geometric_mean(v)}" if len(v) > 1 else
                 f"{k} 1 run {v[0]:.3f}x" for k, v in sorted(by_kept.items(), key=lambda kv: -len(kv[1]))]
        out.append(f"The same, run by run, by the plan kept (each default run against the median of "
                   f"its kept plan's column): {'; '.join(parts)}.\n")
    return out


def runs_vs_kept(rows):
    """{kept column: [default run / the median of that column, ...]} over every row."""
    out = {}
    for r in rows:
        for k, x in run_ratios_vs_kept(r):
            out.setdefault(k, []).append(x)
    return out


# The preload's columns of a full row, and the bound of --check-best that issue 12 sets.
PRELOAD_COLUMNS = ("default", "passthrough", "fusion", "buckets", "prophet", "optimal")
SAME_CODE_BOUND = 1.03


def same_code_ratios(rows):
    """Each preload column against the lowest of the others, over the rows in which every default
    run's loop kept nothing (an unsettled comm: Horovod's fused calls; no plan under any policy,
    so every preload column runs the same code and their differences are the cells' noise)."""
    out = []
    for r in rows:
        med = r.get("median_us", {})
        kept = kept_plans(r)
        if not kept or any(kept) or any(c not in med for c in PRELOAD_COLUMNS):
            continue
        for c in PRELOAD_COLUMNS:
            out.append(med[c] / min(med[o] for o in PRELOAD_COLUMNS if o != c))
    return out


def geometric_mean(ratios):
    """'geometric mean Gx, 95% interval L-Hx' of ratios (the interval from their own spread)."""
    logs = [math.log(x) for x in ratios]
    m = statistics.mean(logs)
    half = 1.96 * statistics.stdev(logs) / math.sqrt(len(logs)) if len(logs) > 1 else 0.0
    return (f"geometric mean {math.exp(m):.3f}x, 95% interval {math.exp(m - half):.3f}-"
            f"{math.exp(m + half):.3f}x")


def kept_plans(row):
    """The candidate each default run's loop kept last (None where it kept none: an unsettled
    comm), from the run's INFO lines."""
    out = []
    for story in row.get("loop", []):
        kept = [m.group(1) for m in (re.search(r"trial round \d+: (\S+) kept \(", l) for l in story) if m]
        out.append(kept[-1] if kept else None)
    return out


def kept_columns(row):
    """The column of the plan each default run's loop kept last; None where it kept none (an
    unsettled comm) or a candidate that has no column of its own (optimal-alpha4, ...)."""
    cols = row.get("runs_us", {})
    return [k if k in cols and k != "default" else None for k in kept_plans(row)]


def run_ratios_vs_kept(row):
    """(kept column, default run / the median of that column) for each run that kept a plan that
    has a column."""
    runs = row.get("runs_us", {})
    return [(k, d / statistics.median(runs[k]))
            for d, k in zip(runs.get("default", []), kept_columns(row)) if k]


def default_vs_kept(row):
    """The median over the default's runs of run / (the median of the kept plan's column), or
    None when no run kept a plan that has a column."""
    ratios = [x for _, x in run_ratios_vs_kept(row)]
    return statistics.median(ratios) if ratios else None


def check_best(a, rows):
    """--check-best: the default within F times the best fixed-policy column, row by row."""
    if a.check_best <= 0:
        return False
    subject = [r for r in rows if "default_vs_best" in r]
    if not subject:
        print("bench: FAIL: --check-best needs the default and a PROPHET_POLICY column", file=sys.stderr)
        return True
    failed = False
    for r in subject:
        ok = r["default_vs_best"] <= a.check_best
        failed |= not ok
        print(f'bench: {"ok" if ok else "FAIL"} {r["profile"]} {r["mode"]} n={r["ranks"]} {r["bw"]}: default '
              f'{r["default_vs_best"]:.3f} of {r["best_policy"]} (bound {a.check_best})', file=sys.stderr)
    return failed


if __name__ == "__main__":
    main()
