#!/usr/bin/env python3
"""bench.load: scripts/bench.py --load N (a busy host), without running a benchmark.

1. constant: while a HostLoad is on, N busy loops run (state R in /proc/PID/stat) in a process
   group of their own; after it, none is left (not one process in that group);
2. bursty: the loops really alternate, all stopped (state T) then all running again, and the
   phase decides where the cycle starts (on below the period, off above it);
3. whatever ends the load: an exception in its block, SIGTERM or Ctrl-C (SIGINT) to the bench, and
   the bench killed outright (the kernel's PR_SET_PDEATHSIG): no loop is left;
4. bench.py's main with prophet-emu replaced by a stand-in: every run of every column has its N
   loops, the table's header, the JSON rows and the --resume file say the load, the same sweep
   resumed keeps its rows, a sweep under another load over the same file is refused, and a quiet
   sweep keeps the settings rows had before --load; a run that fails leaves no loop either.

  check_load.py
"""
import contextlib
import importlib.util
import io
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(ROOT, "scripts", "bench.py")
seen = set()  # every loop this test saw, killed at the end should one be left (a broken bench)


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def stat(pid):
    """(state, ppid, pgrp) of pid, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None
    return fields[0], int(fields[1]), int(fields[2])


def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().split(b"\0")[:-1]
    except OSError:
        return None


def spinners(bench, parent=None):
    """{pid: (state, pgrp)} of the busy loops whose parent is `parent` (default: this process)."""
    parent = os.getpid() if parent is None else parent
    want = [w.encode() for w in bench.SPINNER]
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        s = stat(name)
        if s and s[1] == parent and cmdline(name) == want:
            out[int(name)] = (s[0], s[2])
    seen.update(out)
    return out


def alive(pids):
    """The pids of pids still there and not zombies (a zombie has stopped running)."""
    return [p for p in pids if (stat(p) or ("Z",))[0] not in ("Z", "X")]


def group_members(pgrp):
    out = []
    for name in os.listdir("/proc"):
        s = stat(name) if name.isdigit() else None
        if s and s[2] == pgrp and s[0] not in ("Z", "X"):
            out.append(int(name))
    return out


def states(pids):
    return "".join(sorted((stat(p) or ("-",))[0] for p in pids))


def check_constant(bench):
    with bench.HostLoad(2) as load:
        time.sleep(0.1)
        sp = spinners(bench)
        if sorted(sp) != sorted(load.pids()) or len(sp) != 2:
            fail(f"constant: want 2 busy loops, found {sp} (the load says {load.pids()})")
        groups = {g for _, g in sp.values()}
        if len(groups) != 1 or groups == {os.getpgrp()}:
            fail(f"constant: the loops are not in one process group of their own: {sp}")
        pgrp = groups.pop()
        # a busy loop is runnable all the time: R, never T (stopped) or S (asleep)
        for _ in range(5):
            if states(sp) != "RR":
                fail(f"constant: the loops are not all running: {states(sp)}")
            time.sleep(0.02)
    time.sleep(0.05)
    if alive(sp) or group_members(pgrp) or spinners(bench):
        fail(f"constant: loops left after the load: {alive(sp)}, group {group_members(pgrp)}")


def check_bursty(bench):
    period = 0.25
    # phase 1.5 periods: the runs start in the off half, so the loops are stopped at once
    with bench.HostLoad(2, "bursty", period, 1.5 * period) as load:
        time.sleep(0.06)
        if states(load.pids()) != "TT":
            fail(f"bursty, phase in the off half: the loops are not stopped at the start: "
                 f"{states(load.pids())}")
    if alive(spinners(bench)):
        fail("bursty: loops left after a load that ended while stopped")
    with bench.HostLoad(2, "bursty", period, 0.0) as load:
        pids, seq, t0 = load.pids(), [], time.monotonic()
        while time.monotonic() - t0 < 6 * period:
            seq.append((round(time.monotonic() - t0, 3), states(pids)))
            time.sleep(0.02)
    mixed = [s for _, s in seq if s not in ("RR", "TT")]
    phases = [s for i, (_, s) in enumerate(seq) if s in ("RR", "TT") and (i == 0 or seq[i - 1][1] != s)]
    if seq[0][1] != "RR" or phases.count("TT") < 2 or phases.count("RR") < 2 or len(mixed) > 6:
        fail(f"bursty: want the loops running, then stopped, then running, ... every {period} s; "
             f"read {seq}")
    if alive(pids) or spinners(bench):
        fail("bursty: loops left after the load")


CHILD = r"""
import importlib.util, sys, time
spec = importlib.util.spec_from_file_location("bench", sys.argv[1])
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)
bench.install_load_cleanup()
with bench.HostLoad(2, sys.argv[2], 0.2, 0.0) as load:
    print(" ".join(map(str, load.pids())), flush=True)
    time.sleep(60)
"""


def check_ends(bench):
    try:
        with bench.HostLoad(2):
            pids = list(spinners(bench))
            raise ValueError("a run failed")
    except ValueError:
        pass
    if len(pids) != 2 or alive(pids):
        fail(f"an exception in the load's block: loops {pids}, left {alive(pids)}")
    for sig, mode, want_rc in ((signal.SIGTERM, "bursty", 128 + signal.SIGTERM),
                               (signal.SIGINT, "constant", -signal.SIGINT),  # an uncaught KeyboardInterrupt
                               (signal.SIGKILL, "bursty", -signal.SIGKILL)):
        p = subprocess.Popen([sys.executable, "-c", CHILD, BENCH, mode], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        pids = [int(x) for x in p.stdout.readline().split()]
        seen.update(pids)
        time.sleep(0.3)  # a bursty load is stopped now, and a stopped loop must go too
        if len(pids) != 2 or len(alive(pids)) != 2:
            p.kill()
            fail(f"{mode} load in a child bench: loops {pids}, running {alive(pids)}")
        p.send_signal(sig)
        rc = p.wait(timeout=10)
        time.sleep(0.2)  # after SIGKILL the kernel's PDEATHSIG, and init's reaping
        if rc != want_rc or alive(pids):
            fail(f"{signal.Signals(sig).name} to a bench with a {mode} load: rc {rc} (want "
                 f"{want_rc}), loops left {alive(pids)}: {p.stderr.read()[-1000:]}")


def check_main(bench):
    calls = []

    def fake_emu(a, profile, ranks, bw, mode, policy):
        sp = spinners(bench)
        calls.append((policy, len(sp), len({g for _, g in sp.values()})))
        if getattr(a, "fail_at", None) == len(calls):
            raise subprocess.TimeoutExpired("prophet-emu", a.timeout)
        return 100000.0 + 1000 * len(calls), ""

    bench.run_emu = fake_emu
    bench.row_optimum = lambda a, profile, ranks, bw: 90000.0
    bench.build_commit = lambda: "test"

    def main(*extra, fail_at=None):
        argv = ["bench.py", "--profiles", "resnet50", "--ranks", "4", "--bandwidths", "1Gbit",
                "--modes", "per-tensor", "--policies", "default,fusion", "--repeat", "2"] + list(extra)
        parse = bench.parse_args
        def parse_args():
            a = parse()
            a.fail_at = fail_at
            return a
        bench.parse_args, sys.argv, out = parse_args, argv, io.StringIO()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()) as err:
                bench.main()
            return out.getvalue(), None
        except SystemExit as e:
            return out.getvalue(), f"{e.code} {err.getvalue()}"
        except Exception as e:  # a run that failed
            return out.getvalue(), repr(e)
        finally:
            bench.parse_args = parse

    with tempfile.TemporaryDirectory() as d:
        resume, js, md = (os.path.join(d, n) for n in ("sweep.json", "rows.json", "table.md"))
        load = ["--load", "2", "--load-mode", "bursty", "--load-period", "0.2"]
        text, err = main(*load, "--resume", resume, "--json", js, "--out", md)
        if err or len(calls) != 6 or any(c[1:] != (2, 1) for c in calls):
            fail(f"a bursty sweep: {err}; every run wants 2 loops in one group: {calls}")
        if spinners(bench):
            fail("loops left after a sweep")
        host = "host: 2 busy loops, bursty, 0.2 s on / 0.2 s off"
        with open(md) as f:
            if host not in f.read().splitlines()[0]:
                fail(f"the table's header does not say '{host}': {text[:600]}")
        with open(js) as f:
            rows = json.load(f)
        with open(resume) as f:
            kept = json.load(f)
        want = {"procs": 2, "mode": "bursty", "period_s": 0.2}
        for r in rows + kept:
            phases = r.get("load_phase_s", [])
            if r.get("host") != host[len("host: "):] or r["settings"].get("load") != want \
                    or len(phases) != 2 or not all(0 <= x < 0.4 for x in phases):
                fail(f"a row does not record its load: {r}")

        calls.clear()
        text, err = main(*load, "--resume", resume)
        if err or calls or host not in text:
            fail(f"the same sweep resumed: {err}, runs {calls} (want none)")
        for other in ([], ["--load", "2"], ["--load", "3", "--load-mode", "bursty", "--load-period", "0.2"],
                      ["--load", "2", "--load-mode", "bursty", "--load-period", "1"]):
            text, err = main(*other, "--resume", resume)
            if not err or "other settings" not in err or "its host: 2 busy loops, bursty" not in err or calls:
                fail(f"a sweep under another load ({other or 'quiet'}) over a file of bursty rows: "
                     f"{err}, runs {calls} (want refused, none)")

        quiet = os.path.join(d, "quiet.json")
        text, err = main("--resume", quiet)
        with open(quiet) as f:
            rows = json.load(f)
        if err or calls[-1][1] != 0 or "host: quiet" not in text or "load" in rows[0]["settings"] \
                or rows[0]["host"] != "quiet":
            fail(f"a quiet sweep: {err}, runs {calls}, settings {rows[0]['settings']}")

        calls.clear()
        text, err = main("--load", "2", fail_at=2)
        if len(calls) != 2 or "TimeoutExpired" not in (err or "") or spinners(bench):
            fail(f"a run that timed out: runs {calls}, loops left {spinners(bench)}")
    if bench.HostLoad.active:
        fail(f"loads still registered: {bench.HostLoad.active}")


def main():
    spec = importlib.util.spec_from_file_location("bench", BENCH)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    try:
        check_constant(bench)
        check_bursty(bench)
        check_ends(bench)
        check_main(bench)
    finally:
        for pid in alive(seen):  # a broken bench must not leave them spinning on a shared host
            cmd = cmdline(pid)
            if cmd == [w.encode() for w in bench.SPINNER]:
                os.kill(pid, signal.SIGKILL)
    print("ok: --load runs its busy loops during every run, bursty ones alternate, and none is left")


if __name__ == "__main__":
    main()
