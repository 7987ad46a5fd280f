#!/usr/bin/env python3
"""Real training loops under the preload (the default knobs), on the emulated cluster.

usage: real_conditions.py CASE BUILD PROFILE
  extras    per-parameter calls with a loss all-reduce (and a host synchronisation) every 10th
            iteration and an evaluation (three metric all-reduces, one in int64) every 25th: the
            learner keeps the iteration (no "learning again" once a plan is agreed), every extra
            call is counted as one (the summary's extras= equals the calls the job issued beyond
            its gradients), plans are agreed and blocks of several calls released on every rank,
            and the results stay exact.
  tp        a second, tensor-parallel communicator (32 small all-reduces an iteration on the
            compute stream, each read by the next kernel) beside the gradients' comm: no
            broadcast of the preload's ever reaches NCCL on it (the emulated NCCL's count per
            comm), while the gradients' comm still agrees plans and releases blocks.
  run-ahead the host runs ahead of the GPU (--wait none: no host synchronisation per step; the
            emulated driver's bounded queue paces it): the closed loop's samples are GPU times
            (rank 0's log: every `sample` record on the GPU clock), the trials end in a choice
            (check_plan.py trials: every figure the median of its logged samples), and the
            results stay exact.
Exit 0 and one line of figures, or 1 with the first violation.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def fail(msg, out=""):
    print("FAIL: " + msg)
    if out:
        print("---- output (tail)")
        print("\n".join(out.splitlines()[-30:]))
    sys.exit(1)


def run_emu(build, profile, ranks, args, logs):
    env = dict(os.environ)
    pre = os.environ.get("E2E_PRELOAD_PREFIX", "")
    env.update({"LD_LIBRARY_PATH": os.path.join(build, "lib", "emu"),
                "LD_PRELOAD": (pre + " " if pre else "") + os.path.join(build, "lib",
                                                                        "libprophet.so"),
                "PROPHET_LOG": logs, "PROPHET_LOG_ITERS": "0:1000000", "PROPHET_DEBUG": "INFO"})
    js = os.path.join(logs, "emu.json")
    cmd = [os.path.join(build, "bin", "prophet-emu"), "--timeout", "200", "--quiet", "--ranks",
           str(ranks), "--profile", profile, "--json", js] + args
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=260)
    out = p.stdout + p.stderr
    if p.returncode != 0:
        fail("prophet-emu exited %d" % p.returncode, out)
    with open(js) as f:
        return out, json.load(f)


def summaries(out, ranks, comm=0):
    s = re.findall(r"prophet: .*INFO summary comm %d rank (\d+)/\d+: (.*)" % comm, out)
    if len(s) != ranks:
        fail("%d summary lines for comm %d, want %d" % (len(s), comm, ranks), out)
    return [dict(kv.split("=", 1) for kv in line.split()) for _, line in s]


def check_plans(out, sums, what):
    for r, s in enumerate(sums):
        if int(s["plans"]) < 1 or int(s["blocks>1"]) < 1:
            fail("%s: rank %d agreed %s plans, released %s blocks of several calls" %
                 (what, r, s["plans"], s["blocks>1"]), out)


def case_extras(build, profile, logs):
    ranks = 4
    out, o = run_emu(build, profile, ranks, ["--mode", "per-param-sync", "--iters", "120",
                                             "--scale", "0.05", "--elements-scale", "0.01",
                                             "--loss-every", "10", "--eval-every", "25"], logs)
    sums = summaries(out, ranks)
    check_plans(out, sums, "extras")
    # the job's calls beyond its gradients, per rank (prophet-emu's JSON)
    for r, s in enumerate(sums):
        job_extra = o["extras"]["loss_allreduces"][r] + o["extras"]["eval_allreduces"][r]
        if int(s["extras"]) != job_extra or job_extra == 0:
            fail("extras: rank %d counted %s extras, the job issued %d" %
                 (r, s["extras"], job_extra), out)
    first_plan = out.find("plan v")
    if first_plan < 0:
        fail("extras: no plan agreed", out)
    relearn = out.count("call sequence changed; learning again", first_plan)
    if relearn:
        fail("extras: %d 'learning again' lines after the first plan: the extra calls broke "
             "the learned iteration" % relearn, out)
    print("extras: %d ranks, %s extras each, plans %s, blocks>1 %s, no relearn after the first "
          "plan" % (ranks, sums[0]["extras"], sums[0]["plans"], sums[0]["blocks>1"]))


def case_tp(build, profile, logs):
    ranks = 4
    out, o = run_emu(build, profile, ranks, ["--mode", "per-tensor", "--iters", "70",
                                             "--warmup", "40", "--scale", "0.05",
                                             "--elements-scale", "0.01", "--tp-comm", "32"], logs)
    check_plans(out, summaries(out, ranks, 0), "tp (gradients' comm)")
    tp = o["nccl"]["tp"]
    if any(b != 0 for b in tp["broadcast"]):
        fail("tp: the tensor-parallel comm saw broadcasts %s (after the warm-up: %s); want none"
             % (tp["broadcast"], tp["broadcast_after_warmup"]), out)
    print("tp: tensor-parallel comm: %s all-reduces, 0 broadcasts on every rank; gradients' "
          "comm: %s broadcasts" % (tp["allreduce"][0], o["nccl"]["grad"]["broadcast"][0]))


def case_run_ahead(build, profile, logs):
    ranks = 2
    out, o = run_emu(build, profile, ranks, ["--mode", "per-param-sync", "--iters", "150",
                                             "--scale", "0.05", "--elements-scale", "0.01",
                                             "--wait", "none"], logs)
    ahead = max(o.get("max_run_ahead") or [0])
    with open(os.path.join(logs, "prophet-rank0.json")) as f:
        recs = json.load(f)["records"]
    samples = [r for r in recs if r["kind"] == "sample"]
    if not samples or any(r["clock"] != "gpu" for r in samples):
        fail("run-ahead: %d samples, %d not on the GPU clock" %
             (len(samples), sum(r["clock"] != "gpu" for r in samples)), out)
    late = sum(r["taken_at"] - r["iteration"] > 1 for r in samples)
    p = subprocess.run([sys.executable, os.path.join(HERE, "check_plan.py"), logs, str(ranks),
                        "trials"], capture_output=True, text=True)
    if p.returncode != 0:
        fail("run-ahead: " + (p.stdout + p.stderr).strip(), out)
    print("run-ahead: host ahead by up to %s iterations; %d samples on the GPU clock, %d of them "
          "known more than one iteration late; %s" % (ahead, len(samples), late,
                                                      p.stdout.strip()))


def main(argv):
    if len(argv) != 4 or argv[1] not in ("extras", "tp", "run-ahead"):
        print(__doc__)
        return 2
    with tempfile.TemporaryDirectory() as logs:
        {"extras": case_extras, "tp": case_tp, "run-ahead": case_run_ahead}[argv[1]](
            argv[2], argv[3], logs)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
