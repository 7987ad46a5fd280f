#!/usr/bin/env python3
"""Checks of prophet-emu's command line and outputs, run by ctest.

usage: emu_suite.py CASE BIN PROFILE [MODE]
  help        --help exits 0 and documents every option defined in options.c
  bad-option  each bad command line exits 2 with one line on stderr, without starting ranks
  json        --json OUT parses and holds the expected fields and call/byte counts
  mismatch    --mismatch-rank fails fast (exit 1) and stderr names both collectives
  corrupt     --corrupt-rank makes the ranks report the wrong element (exit 1)
  lookups     --cuda-api runtime takes the framework's entry points from cuGetProcAddress
              (emulated driver's counts, EMU_CUDA_PROC_DUMP), --cuda-api driver does not, and
              the emulated NCCL always does
The training-loop extras (JSON counts of the calls issued, reached NCCL and checked):
  loss         --loss-every: one loss all-reduce per K iterations, each checked
  eval         --eval-every/--eval-calls: three metric all-reduces per repetition, checked
  wait-none    --wait none in every mode: exact, drained after the last iteration
  queue-depth  EMU_CUDA_QUEUE_DEPTH=4 paces the host (run-ahead <= 1 iteration); unbounded (0)
               it runs ahead (not under a preload)
  tp-comm      --tp-comm: N checked all-reduces per pass on a second communicator, counted
               per communicator with the broadcasts
  accumulate   --accumulate: M micro-steps, no all-reduce in the first M-1
  combined     all of them in one run
With EMU_TEST_PRELOAD set, these cases run prophet-emu with LD_PRELOAD=$EMU_TEST_PRELOAD and 30
iterations (the e2e.extras_* tests), where calls reached NCCL may exceed those of the job (an
interposer's own calls) but never fall short of them.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
FAST = ["--scale", "0.05", "--elements-scale", "0.01", "--quiet"]


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run(cmd, timeout=60):
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return p, time.monotonic() - t0


def options_in_source():
    src = open(os.path.join(HERE, "options.c")).read()
    opts = re.findall(r'\{"([a-z-]+)", (?:required|no)_argument', src)
    if len(opts) < 10:
        fail("could not read the option table from options.c")
    return opts


PRELOAD = os.environ.get("EMU_TEST_PRELOAD", "")
# under a preload: enough iterations for it to hold calls (its learner needs 16 iteration starts)
ITERS = 30 if PRELOAD else 3


def emu_json(emu, args, env_extra=None, timeout=90):
    """Runs prophet-emu (under EMU_TEST_PRELOAD if set), exit 0 required; returns its JSON."""
    env = dict(os.environ)
    if PRELOAD:
        env["LD_PRELOAD"] = PRELOAD
    env.update(env_extra or {})
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.json")
        cmd = [emu] + args + ["--json", out, "--timeout", str(timeout - 10)] + FAST
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        if p.returncode != 0:
            fail("%s: exit %d: %s" % (" ".join(args), p.returncode, p.stderr[-3000:]))
        return json.load(open(out))


def job_args(profile, mode_args, iters=None):
    return ["--ranks", "2", "--profile", profile, "--iters", str(iters or ITERS)] + mode_args


def total_iters(o):
    return o["iters"] + o["warmup"]


def per_rank(o, section, key, want, what):
    got = o[section][key]
    if any(v != want for v in got):
        fail("%s: %s.%s = %s, expected %d on every rank" % (what, section, key, got, want))


def check_grad_comm(o, what, exact_job=None):
    """Every call the job issued on the gradients' communicator reached NCCL (exactly, without a
    preload); with exact_job, the job issued that many."""
    g = o["nccl"]["grad"]
    for r in range(o["ranks"]):
        reached, job = g["allreduce"][r], g["job_allreduce"][r]
        if reached < job or (not PRELOAD and reached != job):
            fail("%s: rank %d: %d all-reduces reached NCCL, the job issued %d" %
                 (what, r, reached, job))
        if exact_job is not None and job != exact_job:
            fail("%s: rank %d: the job issued %d all-reduces, expected %d" %
                 (what, r, job, exact_job))
        if not 0 <= g["allreduce_after_warmup"][r] <= reached:
            fail("%s: rank %d: bad allreduce_after_warmup %s" % (what, r, g))
        if g["broadcast"][r] < g["job_broadcast"][r] or g["job_broadcast"][r] != 0:
            fail("%s: rank %d: broadcasts %s" % (what, r, g))
        if not PRELOAD and g["broadcast"][r] != 0:
            fail("%s: rank %d: a broadcast reached NCCL without an interposer" % (what, r))


def check_extra_calls(emu, profile, margs, opts, per_iter, kind):
    """Runs the job with opts; every kind_allreduces issued and checked (per_iter per k-th
    iteration, k = opts[1]), and the gradients' comm saw the job's calls."""
    o = emu_json(emu, job_args(profile, margs + opts))
    n = total_iters(o) // int(opts[1]) * per_iter  # iterations k-1, 2k-1, ...
    what = "%s %s" % (" ".join(opts), " ".join(margs))
    per_rank(o, "extras", kind + "_allreduces", n, what)
    per_rank(o, "extras", kind + "_checked", n, what)
    grads = len(json.load(open(profile))["tensors"])
    check_grad_comm(o, what, grads * total_iters(o) + n if margs[1] == "per-tensor" else None)
    print("ok: %s: %d %s all-reduces checked" % (what, n, kind))


def case_loss(emu, profile, mode):
    for margs in (["--mode", "per-tensor"], ["--mode", "horovod"],
                  ["--mode", "per-param-sync", "--current-stream"],
                  ["--mode", "ddp", "--wait", "none"]):
        if PRELOAD and margs[1] in ("per-param-sync", "ddp"):
            continue  # short: the preload runs take 30 iterations
        check_extra_calls(emu, profile, margs, ["--loss-every", "2"], 1, "loss")


def case_eval(emu, profile, mode):
    reps = 2
    for margs in (["--mode", "per-tensor"], ["--mode", "ddp", "--wait", "per-layer"]):
        if PRELOAD and margs[1] == "ddp":
            continue
        check_extra_calls(emu, profile, margs, ["--eval-every", "2", "--eval-calls", str(reps)],
                          reps * 3, "eval")


def case_wait_none(emu, profile, mode):
    modes = (["per-tensor"], ["ddp"], ["horovod"], ["per-param-sync"],
             ["per-param-sync", "--scale-each"])
    for m in modes[:2] if PRELOAD else modes:
        o = emu_json(emu, job_args(profile, ["--mode"] + m + ["--wait", "none"]))
        what = "--wait none --mode %s" % " ".join(m)
        if o["wait"] != "none" or o["ok"] is not True or len(o["iteration_us"]) != o["iters"]:
            fail("%s: bad header %s" % (what, o))
        if min(o["iteration_us"]) <= 0 or min(o["drain_us"]) <= 0:
            fail("%s: iteration_us %s drain_us %s" % (what, o["iteration_us"], o["drain_us"]))
        check_grad_comm(o, what)
        print("ok: %s: median %.0f us, drained in %.0f us, ran ahead %s" %
              (what, o["median_us"], o["drain_us"][0], o["max_run_ahead"]))


def case_queue_depth(emu, profile, mode):
    iters = 30 if PRELOAD else 10
    args = job_args(profile, ["--mode", "per-tensor", "--wait", "none"], iters)
    o = emu_json(emu, args, {"EMU_CUDA_QUEUE_DEPTH": "4"})
    if max(o["max_run_ahead"]) > 1:
        fail("EMU_CUDA_QUEUE_DEPTH=4: the host ran %s iterations ahead of the GPU, expected at "
             "most 1: the launches did not block" % o["max_run_ahead"])
    print("ok: EMU_CUDA_QUEUE_DEPTH=4: ran ahead at most %s, median iteration %.0f us" %
          (o["max_run_ahead"], o["median_us"]))
    if PRELOAD:
        return  # an interposer may wait for the GPU at points of its own
    o = emu_json(emu, args, {"EMU_CUDA_QUEUE_DEPTH": ""})
    if max(o["max_run_ahead"]) > 2:
        fail("default depth: ran %s iterations ahead, expected at most 2" % o["max_run_ahead"])
    o = emu_json(emu, args, {"EMU_CUDA_QUEUE_DEPTH": "0"})
    if min(o["max_run_ahead"]) < 3:
        fail("EMU_CUDA_QUEUE_DEPTH=0 (unbounded): ran only %s iterations ahead of the GPU" %
             o["max_run_ahead"])
    print("ok: unbounded: ran ahead %s of %d iterations, median iteration %.0f us (host only)" %
          (o["max_run_ahead"], total_iters(o), o["median_us"]))


def check_tp(o, n, what):
    t = total_iters(o) * o["extras"]["accumulate"] * n
    per_rank(o, "extras", "tp_allreduces", t, what)
    per_rank(o, "extras", "tp_checked", t, what)
    tp = o["nccl"].get("tp")
    if not tp:
        fail("%s: no nccl.tp in the JSON" % what)
    for r in range(o["ranks"]):
        if tp["job_allreduce"][r] != t or tp["allreduce"][r] < t or \
                (not PRELOAD and tp["allreduce"][r] != t):
            fail("%s: rank %d: tp comm counts %s, expected %d" % (what, r, tp, t))
        if tp["broadcast"][r] < 0 or tp["broadcast_after_warmup"][r] > tp["broadcast"][r]:
            fail("%s: rank %d: tp broadcasts %s" % (what, r, tp))


def case_tp_comm(emu, profile, mode):
    n = 5  # odd: 2 in forward, 3 in backward
    for margs in (["--mode", "ddp"], ["--mode", "per-tensor", "--wait", "per-layer"]):
        if PRELOAD and margs[1] == "per-tensor":
            continue
        o = emu_json(emu, job_args(profile, margs + ["--tp-comm", str(n), "--tp-elements",
                                                     "64"]))
        what = "--tp-comm %d %s" % (n, " ".join(margs))
        check_tp(o, n, what)
        check_grad_comm(o, what)
        print("ok: %s: tp %s, grad broadcasts %s" %
              (what, o["nccl"]["tp"]["allreduce"], o["nccl"]["grad"]["broadcast"]))


def case_accumulate(emu, profile, mode):
    grads = len(json.load(open(profile))["tensors"])
    for m, margs in ((3, ["--mode", "ddp"]), (2, ["--mode", "per-tensor", "--wait", "per-layer"]),
                     (2, ["--mode", "horovod"])):
        if PRELOAD and margs[1] == "horovod":
            continue
        o = emu_json(emu, job_args(profile, margs + ["--accumulate", str(m)]))
        what = "--accumulate %d %s" % (m, " ".join(margs))
        per_rank(o, "extras", "micro_steps", m * total_iters(o), what)
        # no all-reduce in the no_sync micro-steps: per-tensor issues one per gradient and iteration
        check_grad_comm(o, what, grads * total_iters(o) if margs[1] == "per-tensor" else None)
        print("ok: %s: %d micro-steps" % (what, m * total_iters(o)))


def case_combined(emu, profile, mode):
    args = ["--mode", "per-tensor", "--wait", "none", "--loss-every", "2", "--eval-every", "3",
            "--tp-comm", "3", "--accumulate", "2"]
    o = emu_json(emu, job_args(profile, args))
    t = total_iters(o)
    what = " ".join(args)
    per_rank(o, "extras", "loss_checked", t // 2, what)
    per_rank(o, "extras", "eval_checked", t // 3 * 3, what)
    per_rank(o, "extras", "micro_steps", 2 * t, what)
    check_tp(o, 3, what)
    grads = len(json.load(open(profile))["tensors"])
    check_grad_comm(o, what, grads * t + t // 2 + t // 3 * 3)
    print("ok: %s" % what)


def case_help(emu, profile, mode):
    p, _ = run([emu, "--help"])
    if p.returncode != 0:
        fail("--help exited %d" % p.returncode)
    missing = [o for o in options_in_source() if "--" + o not in p.stdout]
    if missing:
        fail("--help does not mention: " + ", ".join("--" + o for o in missing))
    for word in ("EXIT STATUS", "EXAMPLES", "per-tensor", "ddp", "horovod", "default"):
        if word not in p.stdout:
            fail("--help lacks " + word)
    print("ok: --help documents %d options" % len(options_in_source()))


def case_bad_option(emu, profile, mode):
    base = ["--ranks", "2", "--profile", profile, "--mode", "ddp", "--iters", "2"]
    bad = [
        ["--bogus"] + base,
        base + ["extra"],
        ["--ranks", "0"] + base[2:],
        ["--ranks", "abc"] + base[2:],
        ["--ranks", "65"] + base[2:],
        base[:4] + ["--mode", "mpi", "--iters", "2"],
        base[:6] + ["--iters", "0"],
        base + ["--scale", "-1"],
        base + ["--scale", "nan"],
        base + ["--elements-scale", "2"],
        base + ["--wait", "sometimes"],
        base + ["--mismatch-rank", "2"],
        base + ["--host-sync-at", "100000"],
        base + ["--bucket-mb", "0"],
        base + ["--cycle-ms", "x"],
        base + ["--timeout", "0"],
        base + ["--seed", "-3"],
        base + ["--iters"],
        base + ["--kill-rank", "2"],
        base + ["--kill-rank", "1", "--kill-at-iter", "3"],
        base + ["--kill-rank", "1", "--kill-signal", "HUP"],
        base + ["--change-at-iter", "1"],
        base + ["--jitter-us", "-5"],
        base + ["--rss", "3"],
        base + ["--wait", "never"],
        base + ["--loss-every", "0"],
        base + ["--eval-every", "x"],
        base + ["--eval-calls", "2"],
        base + ["--eval-every", "1", "--eval-calls", "65"],
        base + ["--tp-comm", "0"],
        base + ["--tp-elements", "16"],
        base + ["--accumulate", "0"],
        base + ["--accumulate", "65"],
        base + ["--consumer", "ctx-record"],  # ddp
        base[:4] + ["--mode", "per-tensor", "--iters", "2", "--consumer", "ctx-records"],
        base[:4] + ["--mode", "per-tensor", "--iters", "2", "--consumer", "ipc,"],
        base[:4] + ["--mode", "per-tensor", "--iters", "2", "--consumer", ","],
        base[:4] + ["--mode", "per-param-sync", "--iters", "2", "--consumer", "ipc",
                    "--wait", "per-layer"],
        ["--ranks", "2", "--profile", profile, "--mode", "per-tensor", "--iters", "2",
         "--bucket-view"],
        ["--ranks", "2", "--mode", "ddp", "--iters", "2"],
        ["--ranks", "2", "--profile", "/nonexistent.json", "--mode", "ddp", "--iters", "2"],
        ["--ranks", "2", "--profile", os.path.join(HERE, "emu_suite.py"), "--mode", "ddp",
         "--iters", "2"],
    ]
    for args in bad:
        p, dt = run([emu] + args, timeout=20)
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        if lines and lines[-1] == "Try 'prophet-emu --help'.":  # a usage error's pointer
            lines.pop()
        if p.returncode != 2:
            fail("%s: exit %d, expected 2 (stderr: %s)" % (args, p.returncode, p.stderr))
        if len(lines) != 1 or not lines[0].startswith("prophet-emu:"):
            fail("%s: expected one 'prophet-emu:' line on stderr, got %r" % (args, p.stderr))
        if p.stdout:
            fail("%s: unexpected stdout %r" % (args, p.stdout))
    print("ok: %d bad command lines exit 2 with one line" % len(bad))


def scaled_sizes(profile, es):
    t = json.load(open(profile))["tensors"]
    return t, [max(1, int(x["elements"] * es + 0.5)) * 4 for x in t]


def ddp_buckets(sizes, order, first, cap):
    n, fill, lim = 0, 0, first
    for g in order:
        fill += sizes[g]
        if fill >= lim:
            n, fill, lim = n + 1, 0, cap
    return n + (1 if fill else 0)


def case_json(emu, profile, mode):
    es = 0.01
    tensors, sizes = scaled_sizes(profile, es)
    mib = 1024.0 * 1024.0
    expect_calls = {
        "per-tensor": len(tensors),
        "ddp": ddp_buckets(sizes, range(len(sizes)), int(1 * mib * es), int(25 * mib * es)),
    }
    for m in ("per-tensor", "ddp", "horovod"):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "out.json")
            p, _ = run([emu, "--ranks", "2", "--profile", profile, "--mode", m, "--iters", "3",
                        "--warmup", "2", "--json", out] + FAST)
            if p.returncode != 0:
                fail("%s: exit %d: %s" % (m, p.returncode, p.stderr))
            o = json.load(open(out))
        for k in ("mode", "ranks", "profile", "iters", "warmup", "iteration_us", "median_us",
                  "mean_us", "calls_per_iter", "bytes_per_iter", "ok"):
            if k not in o:
                fail("%s: key %s missing in %s" % (m, k, o))
        if o["mode"] != m or o["ranks"] != 2 or o["iters"] != 3 or o["warmup"] != 2:
            fail("%s: wrong header %s" % (m, o))
        if len(o["iteration_us"]) != 3 or min(o["iteration_us"]) <= 0 or o["ok"] is not True:
            fail("%s: bad iteration_us/ok %s" % (m, o))
        if not (min(o["iteration_us"]) <= o["median_us"] <= max(o["iteration_us"])):
            fail("%s: median outside the iterations %s" % (m, o))
        if o["bytes_per_iter"] != sum(sizes):
            fail("%s: bytes_per_iter %d, expected %d" % (m, o["bytes_per_iter"], sum(sizes)))
        if m in expect_calls and o["calls_per_iter"] != expect_calls[m]:
            fail("%s: calls_per_iter %d, expected %d" % (m, o["calls_per_iter"], expect_calls[m]))
        if m == "horovod" and not 1 <= o["calls_per_iter"] <= len(tensors):
            fail("horovod: calls_per_iter %d out of range" % o["calls_per_iter"])
        print("ok: %s json: median %.0f us, %d calls, %d bytes" %
              (m, o["median_us"], o["calls_per_iter"], o["bytes_per_iter"]))
    p, _ = run([emu, "--ranks", "1", "--profile", profile, "--mode", "ddp", "--iters", "1",
                "--json", "-"] + FAST)
    if p.returncode != 0 or json.loads(p.stdout)["ok"] is not True:
        fail("--json - : exit %d, stdout %r" % (p.returncode, p.stdout))


def case_mismatch(emu, profile, mode):
    p, dt = run([emu, "--ranks", "2", "--profile", profile, "--mode", mode, "--iters", "3",
                 "--mismatch-rank", "1", "--timeout", "50"] + FAST)
    err = p.stderr.lower()
    if p.returncode != 1:
        fail("exit %d, expected 1; stderr: %s" % (p.returncode, p.stderr))
    # found by the emulated NCCL's call check, not by --timeout 50: half of it leaves room for a
    # loaded host
    if dt > 25:
        fail("took %.1f s to fail (the timeout's path?)" % dt)
    if "broadcast" not in err or "allreduce" not in err.replace("_", "").replace("-", ""):
        fail("stderr does not name both collectives: %s" % p.stderr)
    print("ok: mismatch (%s) failed in %.2f s" % (mode, dt))


def case_corrupt(emu, profile, mode):
    tensors = json.load(open(profile))["tensors"]
    g = len(tensors) // 2
    for wait in ("all", "per-layer"):
        p, dt = run([emu, "--ranks", "3", "--profile", profile, "--mode", mode, "--iters", "3",
                     "--wait", wait, "--corrupt-rank", "1", "--timeout", "50"] + FAST)
        if p.returncode != 1:
            fail("%s: exit %d, expected 1; stderr: %s" % (wait, p.returncode, p.stderr))
        want = "wrong result: iteration 1 gradient %d '%s' element" % (g, tensors[g]["name"])
        # the first rank to fail exits; the others may see a closed connection first
        ranks = [r for r in range(3) if ("rank %d: " % r + want) in p.stderr]
        if not ranks or p.stderr.count("wrong result") != len(ranks):
            fail("%s: expected ranks to report only '%s'; stderr: %s" % (wait, want, p.stderr))
        if not re.search(r"expected (-?\d+), got (-?\d+)", p.stderr):
            fail("%s: no expected/got values in: %s" % (wait, p.stderr))
    print("ok: corrupted input detected (%s)" % mode)


def proc_lookups(emu, profile, api, ranks):
    """Lookup counts {(name, flags): n} summed over the processes of one run."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "lookups")
        env = dict(os.environ, EMU_CUDA_PROC_DUMP=path)
        p = subprocess.run([emu, "--ranks", str(ranks), "--profile", profile, "--mode", "ddp",
                            "--iters", "1", "--cuda-api", api] + FAST,
                           capture_output=True, text=True, timeout=50, env=env)
        if p.returncode != 0:
            fail("--cuda-api %s: exit %d: %s" % (api, p.returncode, p.stderr))
        counts = {}
        for line in open(path) if os.path.exists(path) else []:
            name, flags, n = line.split()
            counts[(name, int(flags))] = counts.get((name, int(flags)), 0) + int(n)
        return counts


def case_lookups(emu, profile, mode):
    ranks = 2
    rt = proc_lookups(emu, profile, "runtime", ranks)
    drv = proc_lookups(emu, profile, "driver", ranks)
    # per rank (runtime, driver): the runtime double asks once per function and flavour, the
    # NCCL double once per function (legacy-stream flavour for stream-ordered ones)
    per_rank = {
        ("cuGetProcAddress", 0): (2, 1),  # the self-queries
        ("cuLaunchKernel", 2): (1, 0), ("cuMemcpyAsync", 2): (1, 0),
        ("cuStreamSynchronize", 2): (1, 0), ("cuMemcpy", 2): (1, 0),
        ("cuMemcpyAsync", 1): (1, 0), ("cuStreamCreate", 0): (1, 0),
        ("cuLaunchKernel", 1): (2, 1), ("cuEventRecord", 1): (2, 1),
        ("cuStreamWaitEvent", 1): (2, 1), ("cuModuleLoadData", 0): (2, 1),
        ("cuMemAlloc", 0): (2, 1), ("cuEventCreate", 0): (2, 1),
    }
    want = {k: (ranks * a, ranks * b) for k, (a, b) in per_rank.items()}
    for key, (n_rt, n_drv) in want.items():
        if rt.get(key, 0) != n_rt or drv.get(key, 0) != n_drv:
            fail("%s flags %d: runtime %d (want %d), driver %d (want %d)" %
                 (key[0], key[1], rt.get(key, 0), n_rt, drv.get(key, 0), n_drv))
    print("ok: lookups per name and flavour: runtime %d, driver %d entries" %
          (len(rt), len(drv)))


if __name__ == "__main__":
    if len(sys.argv) < 4:
        print(__doc__)
        sys.exit(2)
    case = {"help": case_help, "bad-option": case_bad_option, "json": case_json,
            "mismatch": case_mismatch, "corrupt": case_corrupt,
            "lookups": case_lookups, "loss": case_loss, "eval": case_eval,
            "wait-none": case_wait_none, "queue-depth": case_queue_depth,
            "tp-comm": case_tp_comm, "accumulate": case_accumulate,
            "combined": case_combined}[sys.argv[1]]
    case(sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else None)
