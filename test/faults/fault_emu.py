#!/usr/bin/env python3
"""Fault tests that run prophet-emu (the emulated training job), with or without the preload.

usage: fault_emu.py CASE BUILD PROFILE_DIR [key=value ...]
  kill    a rank is killed (SIGKILL) or hangs (SIGSTOP) in the middle of an iteration: the other
          ranks must fail with an NCCL error (exit 1, not the timeout's 3) within `bound` seconds
  change  from iteration `at` on every rank drops the middle gradient: exact results, and with
          the preload a plan for the old sequence, then 'learning again', then a plan for the new
  jitter  a random host delay before every all-reduce, different per rank: exact, no hang
  soak    many iterations with --rss: each rank's resident memory grows < `max_kb` after warm-up
          and its malloc bytes in use (mallinfo2) < `max_heap_kb`
Common keys: preload=0|1, gate=MODE (PROPHET_GATE; unset: the test's environment decides), held=1
(the fault must find all-reduces HELD by the preload: prophet-emu counts the calls it issued that
have not reached the emulated NCCL, at the kill or change point, or over the run for jitter and
soak; without held=1 a run with gate=observe must hold none), ranks, mode, iters, profile, scale, es (elements
scale), env=VAR=VALUE,VAR=VALUE, extra=--opt,value (more prophet-emu arguments). Prints PASS or FAIL with the reason and the output's tail.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time


def fail(msg, out=""):
    print("FAIL: " + msg)
    if out:
        lines = out.splitlines()
        first = [l for l in lines if l.startswith(("prophet-emu:", "emu-nccl:")) or re.match(r"prophet: \S+ (\[\d+\] )?WARN ", l)]
        print("---- first error lines")
        print("\n".join(first[:15]))
        print("---- output (tail)")
        print("\n".join(lines[-40:]))
    sys.exit(1)


def run_emu(build, profdir, kv, extra, timeout):
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.path.join(build, "lib", "emu")
    if kv.get("preload", "1") == "1":
        pre = os.path.join(build, "lib", "libprophet.so")
        if env.get("FAULT_PRELOAD_PREFIX"):  # e.g. the ASan runtime, which must come first
            pre = env["FAULT_PRELOAD_PREFIX"] + " " + pre
        env["LD_PRELOAD"] = pre
        if "gate" in kv:
            env["PROPHET_GATE"] = kv["gate"]
        env.setdefault("PROPHET_DEBUG", "INFO")
    for item in filter(None, kv.get("env", "").split(",")):
        k, _, v = item.partition("=")
        env[k] = v
    fd, js = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    cmd = [os.path.join(build, "bin", "prophet-emu"), "--ranks", kv.get("ranks", "4"),
           "--mode", kv.get("mode", "per-tensor"), "--iters", kv.get("iters", "40"),
           "--profile", os.path.join(profdir, kv.get("profile", "bert_base") + ".json"),
           "--scale", kv.get("scale", "0.05"), "--elements-scale", kv.get("es", "0.01"),
           "--timeout", str(timeout), "--quiet", "--json", js] + extra + \
        [a for a in kv.get("extra", "").split(",") if a]
    t0 = time.monotonic()
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True, timeout=timeout + 10)
    dt = time.monotonic() - t0
    try:
        with open(js) as f:
            j = json.load(f)
    except (OSError, ValueError):
        j = None
    os.unlink(js)
    # the preload's TRACE lines are many; keep the rest
    out = "\n".join(l for l in p.stdout.splitlines() if not re.match(r"prophet: \S+ (\[\d+\] )?TRACE ", l))
    return p.returncode, out, j, dt


def check_held(kv, what, counts, out):
    """held=1: every count of all-reduces held by the preload at the fault is > 0; gate=observe
    (the preload observes, holds nothing): every count is 0. Prints what was found."""
    if not counts:
        fail("prophet-emu reported no held count %s" % what, out)
    print("all-reduces held by the preload %s: %s" % (what, counts))
    if kv.get("held") == "1" and min(counts) <= 0:
        fail("nothing was held %s: the fault did not meet held calls" % what, out)
    if kv.get("gate") == "observe" and max(counts) != 0:
        fail("observe mode held %d all-reduces %s" % (max(counts), what), out)


def held_over_run(out):
    return [int(m) for m in re.findall(r"held by the interposer: at most (-?\d+) all-reduce", out)]


def check_summaries(kv, out):
    """With the preload every rank prints its summary line at exit."""
    if kv.get("preload", "1") != "1":
        return
    n = len(re.findall(r"prophet: .*INFO summary comm", out))
    if n != int(kv.get("ranks", "4")):
        fail("%d preload summary lines for %s ranks" % (n, kv.get("ranks", "4")), out)
    if re.search(r"plan_rejects=[1-9]", out):
        fail("a rank rejected an agreed plan", out)


def case_kill(build, profdir, kv):
    ranks = int(kv.get("ranks", "4"))
    bound = float(kv.get("bound", "10"))
    # holding starts once the learned iteration survived 16 iteration starts (preload/engine/schedule.c):
    # about iteration 19 for BERT-base per tensor; the kill comes later
    extra = ["--kill-rank", kv.get("rank", "1"), "--kill-at-iter", kv.get("at", "30"),
             "--kill-signal", kv.get("signal", "KILL")]
    # timeout: the whole run's bound (a sanitizer build needs more to reach the kill); the
    # survivors' own bound after the kill is `bound`
    rc, out, j, dt = run_emu(build, profdir, kv, extra, timeout=int(kv.get("timeout", bound + 30)))
    if rc == 3:
        fail("a surviving rank hung until --timeout", out)
    if rc != 1:
        fail("prophet-emu exited %d, expected 1 (the survivors fail)" % rc, out)
    if not j or "kill" not in j:
        fail("no 'kill' object in the JSON", out)
    k = j["kill"]
    if k["survivors_failed"] != ranks - 1:
        fail("%d of %d survivors failed on their own" % (k["survivors_failed"], ranks - 1), out)
    errs = len(re.findall(r"prophet-emu: rank \d+: .*NCCL.*failed|prophet-emu: rank \d+: "
                          r"ncclAllReduce failed", out))
    if errs < ranks - 1:
        fail("%d NCCL error lines for %d survivors" % (errs, ranks - 1), out)
    check_held(kv, "at the kill", [int(m) for m in re.findall(
        r"--kill-rank: \w+ in iteration \d+ after gradient \d+; (-?\d+) all-reduce", out)], out)
    mx = k["max_survivor_exit_s"]
    if mx < 0:
        fail("rank %s never reached its kill point: the run failed before it" % k["rank"], out)
    if not 0 <= mx < bound:
        fail("slowest survivor exited %.3f s after the kill; bound %.1f s" % (mx, bound), out)
    print("kill (%s, %s): survivors failed %.3f s after the kill (max; bound %.1f s); run %.1f s"
          % (kv.get("signal", "KILL"), kv.get("gate", "none") if kv.get("preload", "1") == "1"
             else "no preload", mx, bound, dt))


def case_change(build, profdir, kv):
    at = kv.get("at", "30")
    rc, out, j, dt = run_emu(build, profdir, kv, ["--change-at-iter", at],
                             timeout=int(kv.get("timeout", "100")))
    if rc != 0:
        fail("prophet-emu exited %d (a wrong result, a mismatch or a hang)" % rc, out)
    if re.search(r"mismatch", out, re.I):
        fail("a mismatch was reported", out)
    n_new = j["calls_per_iter"]
    check_summaries(kv, out)
    if kv.get("preload", "1") == "1":
        held = [int(m) for m in re.findall(r"--change-at-iter: gradient \d+ dropped from iteration "
                                           r"\d+ on; (-?\d+) all-reduce", out)]
        if len(held) != int(kv.get("ranks", "4")):
            fail("%d change lines for %s ranks" % (len(held), kv.get("ranks", "4")), out)
        check_held(kv, "at the change", held, out)
    if kv.get("preload", "1") == "1":
        lines = out.splitlines()
        plan = re.compile(r"prophet: .*INFO comm \d+ iteration \d+: plan v\d+ agreed \(\w+, (\d+) calls")
        old = [i for i, l in enumerate(lines) if (m := plan.search(l)) and int(m.group(1)) == n_new + 1]
        if not old:
            fail("no plan for the old sequence (%d calls) was agreed before the change" % (n_new + 1), out)
        relearn = [i for i, l in enumerate(lines) if "call sequence changed; learning again" in l and i > old[0]]
        if not relearn:
            fail("no 'learning again' after the old plan", out)
        new = [i for i, l in enumerate(lines) if (m := plan.search(l)) and int(m.group(1)) == n_new
               and i > relearn[0]]
        if len(new) < int(kv.get("ranks", "4")):
            fail("the new sequence (%d calls) got no agreed plan on every rank" % n_new, out)
        print(lines[old[0]])
        print(lines[relearn[0]])
        print(lines[new[0]])
    print("change at iteration %s: %d calls per iteration after it, results exact; run %.1f s"
          % (at, n_new, dt))


def case_jitter(build, profdir, kv):
    us = kv.get("us", "300")
    rc, out, j, dt = run_emu(build, profdir, kv, ["--jitter-us", us], timeout=int(kv.get("timeout", "240")))
    if rc != 0:
        fail("prophet-emu exited %d" % rc, out)
    check_summaries(kv, out)
    check_held(kv, "during the jittered run (most at once, per rank)", held_over_run(out), out)
    for l in out.splitlines():
        if "summary comm" in l:
            print(l)
            break
    print("jitter %s us, %s iterations at %s ranks: exact, median %.0f us; run %.1f s"
          % (us, kv.get("iters"), kv.get("ranks", "4"), j["median_us"], dt))


def bw_lock_path(pin):
    """The shared probe's lock file that libprophet_bw derives from a pin dir (prophet_bw_shm_name:
    FNV-1a of the path)."""
    h = 2166136261
    for c in pin.encode():
        h = ((h ^ c) * 16777619) & 0xffffffff
    return "/dev/shm/prophet-bw-%08x.ranks" % h


def remove_private_probe(pin):
    try:
        for name in os.listdir(pin):
            if name.startswith("prophet_rk_"):  # pins left by a killed owner
                os.unlink(os.path.join(pin, name))
        os.rmdir(pin)
    except OSError:
        pass
    try:
        os.unlink(bw_lock_path(pin))
    except OSError:
        pass


def case_soak(build, profdir, kv):
    w = kv.get("warm", "100")
    max_kb = int(kv.get("max_kb", "1024"))
    # The job gets a shared eBPF probe of its own. On the host's default one, a process of another
    # test that owned it could end in the middle of the soak: a rank then takes the probe over, and
    # while it loads it libbpf holds the kernel's BTF (~6 MiB of heap, freed when the load ends; a
    # load that straddled a rank's end sample failed CI once). The ranks' own take-overs at the end
    # are covered by prophet-emu --rss (every rank samples before any leaves).
    pin = None
    if "PROPHET_BWMON_PIN=" not in kv.get("env", "") and "PROPHET_BWMON_PIN" not in os.environ:
        pin = "/sys/fs/bpf/prophet-soak-%d" % os.getpid()
        kv["env"] = ",".join(filter(None, [kv.get("env", ""), "PROPHET_BWMON_PIN=" + pin]))
    try:
        rc, out, j, dt = run_emu(build, profdir, kv, ["--rss", w],
                                 timeout=int(kv.get("timeout", "400")))
    finally:
        if pin:
            remove_private_probe(pin)
    if rc != 0:
        fail("prophet-emu exited %d" % rc, out)
    check_summaries(kv, out)
    check_held(kv, "during the soak (most at once, per rank)", held_over_run(out), out)
    rss = j["rss"]
    if min(rss["warm_kb"]) <= 0 or min(rss["end_kb"]) <= 0:
        fail("RSS not sampled on every rank", out)
    growth = [e - s for s, e in zip(rss["warm_kb"], rss["end_kb"])]
    heap = [e - s for s, e in zip(rss["heap_warm_kb"], rss["heap_end_kb"])]
    print("soak: %s iterations, RSS after iteration %s: %s KiB; growth to the end: %s KiB; "
          "malloc bytes in use: %s KiB, growth %s KiB; run %.1f s"
          % (kv.get("iters"), w, rss["warm_kb"], growth, rss["heap_warm_kb"], heap, dt))
    if max(growth) >= max_kb:
        fail("a rank's RSS grew by %d KiB (limit %d KiB)" % (max(growth), max_kb), out)
    # RSS also grows while malloc's arena is first touched (bounded by the arena); a leak shows as
    # bytes in use growing
    max_heap = int(kv.get("max_heap_kb", "64"))
    if max(rss["heap_warm_kb"]) > 0 and max(heap) >= max_heap:
        fail("a rank's malloc bytes in use grew by %d KiB (limit %d KiB)" % (max(heap), max_heap), out)


def main():
    if len(sys.argv) < 4:
        print(__doc__)
        return 2
    case, build, profdir = sys.argv[1:4]
    kv = dict(a.split("=", 1) for a in sys.argv[4:])
    {"kill": case_kill, "change": case_change, "jitter": case_jitter, "soak": case_soak}[case](
        build, profdir, kv)
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
