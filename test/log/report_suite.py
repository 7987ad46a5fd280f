#!/usr/bin/env python3
"""Driver of the prophet-report tests (standard library only). Subcommands:
  invalid REPORT SCHEMA DATADIR   every data/invalid/*.json -> exit 1, one stderr line naming the
                                  file, no signal; the schema validator rejects them too; every
                                  data/valid/*.json -> exit 0 (text and --json) and validates
  truncate REPORT LOG             truncations of LOG at many byte offsets -> exit 1 with one line
                                  (exit 0 where the cut still parses), never a signal;
                                  --allow-truncated gives partial results
  cli REPORT LOG                  --help, bad arguments (exit 2, one line), missing files
  svg REPORT LOG OUTDIR           --svg: well-formed XML, two panels, blocks drawn; rendered to PNG
                                  with rsvg-convert when available (non-background pixels)
  trace REPORT LOG OUTDIR         --trace: valid Trace Event Format (check_trace.py)
  job REPORT SCHEMA DIR OUTDIR LAST  the logs of an 8-rank job (DIR, the job's last step LAST):
                                  the job summary (text, --json) against the per-rank logs, the
                                  DIR argument, traces skipped, a bad log named, the step
                                  mapping, trial/kept marks in text, SVG and trace"""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL " + msg)


def run(cmd, timeout=30):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, errors="replace")
    return p.returncode, p.stdout, p.stderr


def expect_one_line_error(cmd, want_rc, must_contain, label):
    rc, out, err = run(cmd)
    if rc < 0:
        fail("%s: killed by signal %d" % (label, -rc))
        return
    lines = [l for l in err.splitlines() if l.strip()]
    # a usage error (exit 2) ends with the pointer to --help (tools/prophet_cli.h)
    if want_rc == 2 and lines and lines[-1] == "Try 'prophet-report --help'.":
        lines.pop()
    if rc != want_rc:
        fail("%s: exit %d, want %d (stderr: %s)" % (label, rc, want_rc, err.strip()[:300]))
    elif len(lines) != 1:
        fail("%s: %d stderr lines, want 1: %r" % (label, len(lines), err[:300]))
    elif must_contain and must_contain not in lines[0]:
        fail("%s: error line lacks %r: %s" % (label, must_contain, lines[0]))


def cmd_invalid(report, schema, datadir):
    validator = os.path.join(HERE, "validate_log.py")
    inv = sorted(os.listdir(os.path.join(datadir, "invalid")))
    for name in inv:
        path = os.path.join(datadir, "invalid", name)
        expect_one_line_error([report, path], 1, path, "invalid/" + name)
        expect_one_line_error([report, "--json", path], 1, path, "invalid/%s --json" % name)
        rc, out, _ = run([sys.executable, validator, schema, path])
        if rc != 1:
            fail("invalid/%s: the schema validator accepted it (rc %d): %s" % (name, rc, out.strip()))
    val = sorted(os.listdir(os.path.join(datadir, "valid")))
    for name in val:
        path = os.path.join(datadir, "valid", name)
        rc, out, err = run([report, path])
        if rc != 0 or not out.strip():
            fail("valid/%s: exit %d: %s" % (name, rc, err.strip()))
        rc, out, err = run([report, "--json", path])
        try:
            doc = json.loads(out)
            assert doc["logs"][0]["rank"] >= 0
        except (ValueError, KeyError, IndexError, AssertionError) as e:
            fail("valid/%s --json: %s (%s)" % (name, e, err.strip()))
        rc, out, _ = run([sys.executable, validator, schema, path])
        if rc != 0:
            fail("valid/%s: schema validator: %s" % (name, out.strip()))
    print("%d invalid and %d valid logs checked" % (len(inv), len(val)))


def cmd_truncate(report, log):
    data = open(log, "rb").read()
    n = len(data)
    offsets = set(range(0, n, max(1, n // 120)))
    offsets.update(range(max(0, n - 80), n))
    nl = [i for i, b in enumerate(data) if b == 0x0A]
    for i in nl[:6] + nl[-6:]:
        offsets.update((i, i + 1))
    tmp = tempfile.mkdtemp(prefix="prophet-trunc-")
    partial_ok = 0
    try:
        for off in sorted(offsets):
            cut = data[:off]
            path = os.path.join(tmp, "cut-%d.json" % off)
            open(path, "wb").write(cut)
            try:
                json.loads(cut.decode())
                parses = True
            except ValueError:
                parses = False
            if parses:
                rc, _, err = run([report, path])
                if rc != 0:
                    fail("cut at %d parses but report exits %d: %s" % (off, rc, err.strip()))
            else:
                expect_one_line_error([report, path], 1, path, "cut at %d/%d" % (off, n))
            rc, out, err = run([report, "--allow-truncated", path])
            if rc < 0:
                fail("cut at %d --allow-truncated: signal %d" % (off, -rc))
            elif rc == 0 and not parses:
                partial_ok += 1
                if "not closed" not in out:
                    fail("cut at %d: partial result does not say the log was not closed" % off)
            elif rc not in (0, 1):
                fail("cut at %d --allow-truncated: exit %d" % (off, rc))
            os.unlink(path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if partial_ok == 0:
        fail("--allow-truncated never produced a partial result")
    print("%d truncations of %d bytes checked, %d partial results" % (len(offsets), n, partial_ok))


def cmd_cli(report, log):
    rc, out, err = run([report, "--help"])
    if rc != 0 or "SYNOPSIS" not in out or "--svg" not in out or err:
        fail("--help: exit %d" % rc)
    for args in (["--bogus", log], ["--svg"], [], ["--iteration", "x", "--svg", "o.svg", log],
                 ["--iteration", "3", log], ["-z", log], ["--trace"], ["--step", "3", log],
                 ["--step", "x", "--svg", "o.svg", log],
                 ["--step", "3", "--iteration", "3", "--svg", "o.svg", log]):
        expect_one_line_error([report] + args, 2, "prophet-report", "args %r" % args)
    expect_one_line_error([report, "/nonexistent/prophet-rank0.json"], 1,
                          "/nonexistent/prophet-rank0.json", "missing file")
    expect_one_line_error([report, log, "/nonexistent/x.json"], 0, "/nonexistent/x.json",
                          "second file missing")
    expect_one_line_error([report, "--svg", "/nonexistent/dir/x.svg", log], 1, "/nonexistent",
                          "unwritable svg")
    expect_one_line_error([report, "--svg", os.devnull, "--iteration", "99999999", log], 1,
                          "99999999", "svg iteration not in log")
    rc, out, err = run([report, "--json", log, log])
    try:
        doc = json.loads(out)
        assert len(doc["logs"]) == 2 and doc["format"] == "prophet-report/1"
        for k in ("iteration_time_us", "network_busy_fraction", "idle_gap_us", "blocks",
                  "bandwidth", "advice"):
            assert k in doc["logs"][0], k
    except (ValueError, KeyError, AssertionError) as e:
        fail("--json with two logs: %r (%s)" % (e, err.strip()))
    print("command line checked")


def png_pixels(path):
    """Decodes an 8-bit RGB/RGBA non-interlaced PNG; returns (w, h, rows of bytes, bpp)."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        ln, typ = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + ln]
        if typ == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and ctype in (2, 6) and interlace == 0, "unsupported PNG"
            bpp = 3 if ctype == 2 else 4
        elif typ == b"IDAT":
            idat += body
        pos += 12 + ln
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev, i = [], bytearray(stride), 0
    for _ in range(h):
        f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b, c = prev[x], (prev[x - bpp] if x >= bpp else 0)
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, rows, bpp


def cmd_svg(report, log, outdir):
    svg = os.path.join(outdir, "iteration.svg")
    rc, out, err = run([report, "--svg", svg, log])
    if rc != 0:
        fail("--svg: exit %d: %s" % (rc, err.strip()))
        return
    try:
        root = ET.parse(svg).getroot()
    except ET.ParseError as e:
        fail("SVG is not well-formed XML: %s" % e)
        return
    ns = "{http://www.w3.org/2000/svg}"
    if root.tag != ns + "svg":
        fail("root element is %s" % root.tag)
    panels = [g for g in root.iter(ns + "g") if g.get("class") == "panel"]
    if len(panels) != 2:
        fail("%d panels, want 2 (early and late iteration)" % len(panels))
    for k, pnl in enumerate(panels):
        rects = [r for r in pnl.iter(ns + "rect") if r.find(ns + "title") is not None]
        if not rects:
            fail("panel %d draws no block" % k)
        for r in rects:
            if float(r.get("width")) <= 0 or not (0 <= float(r.get("x")) <= float(root.get("width"))):
                fail("panel %d: block outside the picture" % k)
                break
        if not any(l.get("stroke") == "#1f77b4" for l in pnl.iter(ns + "line")):
            fail("panel %d draws no arrival" % k)
    tool = shutil.which("rsvg-convert")
    if not tool:
        print("rsvg-convert not found: SVG structure checked only (install librsvg2-bin to render)")
        return
    png = os.path.join(outdir, "iteration.png")
    rc, _, err = run([tool, "-b", "white", "-o", png, svg])
    if rc != 0 or not os.path.getsize(png):
        fail("rsvg-convert failed: %s" % err.strip())
        return
    w, h, rows, bpp = png_pixels(png)
    ink = sum(1 for row in rows for x in range(0, len(row), bpp) if row[x:x + 3] != b"\xff\xff\xff")
    colored = sum(1 for row in rows for x in range(0, len(row), bpp)
                  if row[x] > 200 and 90 < row[x + 1] < 160 and row[x + 2] < 60)  # block orange
    if w < 500 or h < 300 or ink < w * h // 100 or colored == 0:
        fail("rendered PNG %dx%d has %d non-background pixels, %d block pixels" % (w, h, ink, colored))
    else:
        print("rendered with rsvg-convert: %dx%d, %d non-background pixels, %d block pixels"
              % (w, h, ink, colored))


def cmd_trace(report, log, outdir):
    trace = os.path.join(outdir, "report.trace.json")
    rc, _, err = run([report, "--trace", trace, log])
    if rc != 0:
        fail("--trace: exit %d: %s" % (rc, err.strip()))
        return
    rc, out, _ = run([sys.executable, os.path.join(HERE, "check_trace.py"), trace, "--want-gates"])
    print(out.strip())
    if rc != 0:
        fail(out.strip())


# ---- job: the summary of an emulated 8-rank job checked against its per-rank logs ----------

def median(v):
    v = sorted(v)
    n = len(v)
    return (v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2) if n else None


def load_log(path):
    doc = json.load(open(path))
    iters, plans, nets = {}, [], []
    for r in doc["records"]:
        if r["kind"] == "iteration":
            it = iters.setdefault(r["iteration"], {"calls": [], "before": None})
            it["calls"] += r["calls"]
            if it["before"] is None:
                it["before"] = r.get("bytes_before")
        elif r["kind"] == "plan":
            plans.append(r)
        elif r["kind"] == "net":
            nets.append(r)
    return doc, iters, plans, nets


def steps_of(iters):
    """The job's step of each iteration that begins one (the definition in docs/log-schema.md):
    bytes_before over one iteration's bytes (the median difference between consecutive starts)."""
    keys = sorted(iters)
    d = sorted(iters[b]["before"] - iters[a]["before"] for a, b in zip(keys, keys[1:])
               if b == a + 1 and iters[a]["before"] is not None and iters[b]["before"] is not None
               and iters[b]["before"] > iters[a]["before"])
    if not d:
        return {}, 0
    period = d[len(d) // 2]
    slack = period // 256
    out = {}
    for k in keys:
        b = iters[k]["before"]
        if b is None:
            continue
        step = (b + slack) // period
        if b + slack - step * period <= 2 * slack:
            out[k] = step
    return out, period


def iteration_median(iters, steps):
    """Median time between the starts (first arrival) of consecutive iterations that begin steps."""
    def start(calls):
        ts = [c["arrival_us"] or c["ready_us"] or c["launch_us"] for c in calls]
        ts = [t for t in ts if t > 0]
        return min(ts) if ts else None
    keys = sorted(iters)
    gaps = []
    for a, b in zip(keys, keys[1:]):
        if b != a + 1 or (steps and (a not in steps or b not in steps)):
            continue
        sa, sb = start(iters[a]["calls"]), start(iters[b]["calls"])
        if sa and sb and sb > sa:
            gaps.append(sb - sa)
    return median(gaps)


def mark_of(plan):
    t = plan.get("trial")
    return "fixed" if not t else ("trial" if t["phase"] == "trial" else "kept")


def close(a, b, what):
    if a is None or b is None or abs(a - b) > 1e-6 * max(1.0, abs(b)):
        fail("%s: report says %r, the logs give %r" % (what, a, b))


def check_job_json(report, logdir, logs, last_step):
    rc, out, err = run([report, "--json", logdir])
    if rc != 0:
        fail("--json DIR: exit %d: %s" % (rc, err.strip()))
        return None
    doc = json.loads(out)
    job = doc["job"]
    ranks = sorted(logs)
    if job["logs_read"] != len(ranks) or len(doc["logs"]) != len(ranks):
        fail("--json: %d logs read, want %d" % (job["logs_read"], len(ranks)))
    if len(doc["skipped"]) != len(ranks) or not all(p.endswith(".trace.json")
                                                   for p in doc["skipped"]):
        fail("--json: skipped %r, want the %d traces" % (doc["skipped"], len(ranks)))
    # iteration time per rank, min/median/max and the slowest rank
    med = {r: iteration_median(logs[r][1], steps_of(logs[r][1])[0]) for r in ranks}
    per = {e["rank"]: e["median_us"] for e in job["iteration_time_us"]["per_rank"]}
    for r in ranks:
        close(per.get(r), med[r], "rank %d median iteration time" % r)
    it = job["iteration_time_us"]
    vals = [med[r] for r in ranks]
    close(it["min"], min(vals), "min iteration time")
    close(it["max"], max(vals), "max iteration time")
    close(it["median"], median(vals), "median iteration time")
    slowest = max(ranks, key=lambda r: med[r])
    if it["slowest_rank"] != slowest or it["max_rank"] != slowest:
        fail("slowest rank %r, the logs say %d" % (it["slowest_rank"], slowest))
    # the network: the latest net record of each rank
    for key, field in (("model_Bps", "bandwidth_Bps"), ("probe_Bps", "probe_Bps")):
        v = [logs[r][3][-1][field] for r in ranks if logs[r][3]]
        v = [x for x in v if x is not None and x > 0]
        sp = job["network"][key]
        if sp["ranks"] != len(v):
            fail("network %s over %d ranks, want %d" % (key, sp["ranks"], len(v)))
        elif v:
            close(sp["median"], median(v), "network %s median" % key)
            close(sp["min"], min(v), "network %s min" % key)
            close(sp["max"], max(v), "network %s max" % key)
    # the steps: one numbering for the whole run here, ending at the job's last step
    st, _ = steps_of(logs[ranks[0]][1])
    offsets = {k - s for k, s in st.items()}
    steps = job["steps"]
    if not steps["known"] or len(offsets) != 1 or steps["offset"] != offsets.pop():
        fail("step mapping %r, the log gives offsets %r" % (steps, {k - s for k, s in st.items()}))
    last = max(st.values()) if st else None
    seg = steps["segments"][-1] if steps["segments"] else {}
    # the log's last iteration is the job's last step, unless the run ended under passthrough,
    # whose iterations go straight to NCCL and are logged one in 32 (docs/log-schema.md)
    plans = logs[ranks[0]][2]
    pt_end = bool(plans) and ((plans[-1].get("trial") or {}).get("candidate") == "passthrough" or
                              plans[-1].get("policy") == "passthrough")
    if seg.get("last_step") != last or last is None or \
            (last != last_step and not (pt_end and last < last_step)):
        fail("last step: report %r, log %r, the job ran steps 0..%d" % (seg.get("last_step"),
                                                                      last, last_step))
    for r, entry in zip(ranks, doc["logs"]):
        if steps_of(logs[r][1])[0] != st:
            fail("rank %d numbers the steps differently from rank %d" % (r, ranks[0]))
        if entry["rank"] != r or entry["first_step"] != min(st.values()) or \
                entry["last_step"] != last:
            fail("--json logs[%d]: rank %r steps %r..%r" % (r, entry["rank"], entry["first_step"],
                                                           entry["last_step"]))
    # the plans, once for the job, as every rank logged them, each marked
    plans = logs[ranks[0]][2]
    if not job["plans_agree"] or len(job["plans"]) != len(plans) or not plans:
        fail("plans: agree=%r, %d in the job, %d in the log" % (job["plans_agree"],
                                                               len(job["plans"]), len(plans)))
    for jp, lp in zip(job["plans"], plans):
        if jp["version"] != lp["version"] or jp["mark"] != mark_of(lp) or \
                jp["from_iteration"] != lp["from_iteration"] or \
                jp["from_step"] != lp["from_iteration"] - steps["offset"]:
            fail("plan v%d: %r against the log's %r" % (lp["version"], jp, lp))
    if not isinstance(job["trials"], list) or not isinstance(job["advice"], dict):
        fail("--json lacks trials or advice")
    adv = job["advice"]
    if not adv.get("available") or adv.get("ranks_used") != len(ranks):
        fail("job advice %r, want one from %d ranks" % (adv, len(ranks)))
    else:
        # one setting for the job: simulated over the median of the ranks' network models
        bw = [[n for n in logs[r][3] if n["source"] != "default" and n["bandwidth_Bps"]][-1]
              ["bandwidth_Bps"] for r in ranks]
        close(adv["net"]["bandwidth_Bps"], median(bw), "the job advice's network")
        if adv["profile"] != "job" or adv["ddp"]["bucket_cap_mb"] <= 0:
            fail("job advice: profile %r, bucket %r" % (adv["profile"], adv["ddp"]))
    return doc


def check_job_text(report, logdir, logs):
    rc, out, err = run([report, logdir])
    notes = [l for l in err.splitlines() if l.strip()]
    if rc != 0 or len(notes) != 1 or "trace" not in notes[0]:
        fail("DIR: exit %d, stderr %r (want exit 0 and one note on the traces)" % (rc, err))
    plans = logs[min(logs)][2]
    for p in plans:
        lines = [l for l in out.splitlines() if l.strip().startswith("plan v%d " % p["version"])]
        if len(lines) != 1 or (" %s " % mark_of(p)) not in lines[0]:
            fail("plan v%d: %d lines %r, want one marked %s" % (p["version"], len(lines), lines,
                                                                mark_of(p)))
    for key in ("steps ", "iteration time ", "network model ", "advice (job) ", "slowest rank"):
        if key not in out:
            fail("the job summary lacks %r" % key)
    if plans and mark_of(plans[-1]) == "trial" and "inside trial round" not in out:
        fail("the job ended inside a trial round and the summary does not say so")
    rc, out2, _ = run([report, "--per-rank", logdir])
    if rc != 0 or out2.count("\n  iteration time    median") != len(logs):
        fail("--per-rank: exit %d, want one section per rank" % rc)
    # the files named one by one, traces among them: the same report
    files = sorted(os.path.join(logdir, f) for f in os.listdir(logdir))
    rc, out3, err3 = run([report] + files)
    if rc != 0 or out3 != out:
        fail("FILES (traces among them) differ from DIR: exit %d %s" % (rc, err3.strip()))


def plan_in_force(plans, iteration):
    best = None
    for p in plans:
        if p["from_iteration"] <= iteration and (best is None or
                                                 p["from_iteration"] >= best["from_iteration"]):
            best = p
    return best


def check_job_svg(report, logdir, outdir, logs, name="job.svg"):
    svg = os.path.join(outdir, name)
    rc, _, err = run([report, "--svg", svg, logdir])
    if rc != 0:
        fail("--svg DIR: exit %d: %s" % (rc, err.strip()))
        return
    ns = "{http://www.w3.org/2000/svg}"
    panels = [g for g in ET.parse(svg).getroot().iter(ns + "g") if g.get("class") == "panel"]
    iters, plans = logs[min(logs)][1], logs[min(logs)][2]
    st, _ = steps_of(iters)
    for g in panels:
        title = "".join(g.find(ns + "text").itertext())
        m = re.search(r"iteration (\d+)", title)
        it = int(m.group(1)) if m else -1
        p = plan_in_force(plans, it)
        want = mark_of(p) if p else "none"
        if g.get("data-mark") != want:
            fail("SVG panel %r: mark %r, want %r" % (title, g.get("data-mark"), want))
        if want == "trial" and "TRIAL plan" not in title or want == "kept" and \
                "KEPT plan" not in title:
            fail("SVG panel title %r does not mark the %s plan" % (title, want))
        if it in st and not title.startswith("step %d (iteration %d)" % (st[it], it)):
            fail("SVG panel title %r does not name step %d" % (title, st[it]))


def check_job_svg_step(report, logdir, outdir, logs):
    st, _ = steps_of(logs[min(logs)][1])
    it, step = max(st.items())
    svg = os.path.join(outdir, "step.svg")
    rc, _, err = run([report, "--svg", svg, "--step", str(step), logdir])
    if rc != 0:
        fail("--svg --step %d: exit %d: %s" % (step, rc, err.strip()))
        return
    ns = "{http://www.w3.org/2000/svg}"
    titles = ["".join(g.find(ns + "text").itertext()) for g in ET.parse(svg).getroot().iter(ns + "g")
              if g.get("class") == "panel"]
    if not titles or not titles[-1].startswith("step %d (iteration %d)" % (step, it)):
        fail("--svg --step %d: late panel %r" % (step, titles[-1:]))
    rc, _, err = run([report, "--svg", svg, "--step", "999999", logdir])
    if rc != 1 or "step 999999" not in err:
        fail("--svg --step 999999: exit %d: %s" % (rc, err.strip()))


def check_job_trace(report, logdir, outdir, logs):
    trace = os.path.join(outdir, "job.trace.json")
    rc, _, err = run([report, "--trace", trace, logdir])
    if rc != 0:
        fail("--trace DIR: exit %d: %s" % (rc, err.strip()))
        return
    rc, out, _ = run([sys.executable, os.path.join(HERE, "check_trace.py"), trace])
    if rc != 0:
        fail(out.strip())
    ev = json.load(open(trace))["traceEvents"]
    for r, (_, iters, plans, _) in logs.items():
        st, _ = steps_of(iters)
        spans = [e for e in ev if e["pid"] == r and e.get("cat") == "iteration"]
        if len(spans) != sum(1 for k in iters if iters[k]["calls"]):
            fail("rank %d: %d iteration spans for %d iterations" % (r, len(spans), len(iters)))
        for e in spans:
            k = e["args"]["iteration"]
            want = "step %d" % st[k] if k in st else "iteration %d" % k
            if e["name"] != want or e["args"]["step"] != st.get(k):
                fail("rank %d: span %r for iteration %d, want %r" % (r, e["name"], k, want))
        marks = [e for e in ev if e["pid"] == r and e.get("cat") == "plan"]
        last = max(k for k in iters if iters[k]["calls"])
        shown = [p for p in plans if p["from_iteration"] <= last]
        if [(m["args"]["version"], m["args"]["mark"]) for m in marks] != \
                [(p["version"], mark_of(p)) for p in shown]:
            fail("rank %d: plan markers %r, want %r" % (r, [m["name"] for m in marks],
                                                        [(p["version"], mark_of(p)) for p in shown]))
    # the live traces (PROPHET_TRACE=1): valid, with iteration spans and plan markers
    for r in logs:
        path = os.path.join(logdir, "prophet-rank%d.trace.json" % r)
        ev = json.load(open(path))["traceEvents"]
        if not any(e.get("cat") == "iteration" for e in ev):
            fail("%s: no iteration span" % path)
        if logs[r][2] and not any(e.get("cat") == "plan" for e in ev):
            fail("%s: no plan marker" % path)


def write_log(path, doc):
    with open(path, "w") as f:
        json.dump(doc, f)


def check_job_bad_inputs(report, logdir, outdir, logs):
    tmp = os.path.join(outdir, "mixed")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(logdir, tmp)
    bad = os.path.join(tmp, "prophet-rank%d.json" % (max(logs) + 1))
    open(bad, "w").write('{"format":"prophet-log/1","meta":')
    rc, out, err = run([report, tmp])
    lines = [l for l in err.splitlines() if l.strip()]
    named = [l for l in lines if bad in l]
    if rc != 0 or len(named) != 1 or "job: %d of" % len(logs) not in out:
        fail("a bad log among good ones: exit %d, stderr %r" % (rc, err))
    rc, out, err = run([report, "--json", tmp])
    try:
        doc = json.loads(out)
        assert doc["unreadable"][0]["path"] == bad and doc["job"]["logs_read"] == len(logs)
    except (ValueError, KeyError, IndexError, AssertionError) as e:
        fail("--json with a bad log: %r (%s)" % (e, err.strip()))
    # nothing good: exit 1, the bad log named
    only = os.path.join(outdir, "only-bad")
    shutil.rmtree(only, ignore_errors=True)
    os.makedirs(only)
    shutil.copy(bad, only)
    shutil.copy(os.path.join(logdir, "prophet-rank0.trace.json"), only)
    rc, _, err = run([report, os.path.join(only, os.path.basename(bad)),
                      os.path.join(only, "prophet-rank0.trace.json")])
    if rc != 1 or len([l for l in err.splitlines() if os.path.basename(bad) in l]) != 1:
        fail("only a bad log and a trace: exit %d: %s" % (rc, err.strip()))
    rc, _, err = run([report, only])
    if rc != 1 or "prophet-rank" not in err:
        fail("DIR with only a bad log: exit %d: %s" % (rc, err.strip()))
    empty = os.path.join(outdir, "empty-dir")
    os.makedirs(empty, exist_ok=True)
    expect_one_line_error([report, empty], 1, empty, "DIR without a log")


def check_job_kept(report, logdir, outdir, logs):
    """The logs with a trial round that kept a plan: the kept line, the gain and its marks."""
    tmp = os.path.join(outdir, "kept")
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    r0 = min(logs)
    iters = logs[r0][1]
    first = min(k for k in iters if iters[k]["calls"])
    pass_us, kept_us = 80000, 64000
    for r in logs:
        doc = json.load(open(os.path.join(logdir, "prophet-rank%d.json" % r)))
        base = [x for x in doc["records"] if x["kind"] == "plan"][-1]
        trial = dict(base, version=base["version"] + 1, from_iteration=first + 1,
                     trial={"phase": "trial", "candidate": "fusion", "round": 7, "next_in": 7,
                            "judged": {"candidate": "passthrough", "samples": 4,
                                       "median_us": pass_us}, "chosen_us": None})
        kept = dict(base, version=base["version"] + 2, from_iteration=first + 2,
                    trial={"phase": "chosen", "candidate": "prophet", "round": 7, "next_in": 10,
                           "judged": {"candidate": "fusion", "samples": 4, "median_us": 90000},
                           "chosen_us": kept_us})
        doc["records"] = [x for x in doc["records"] if x["kind"] != "plan"] + [trial, kept]
        if r == r0:
            doc["meta"]["nccl_version"] = "22809"
        write_log(os.path.join(tmp, "prophet-rank%d.json" % r), doc)
    rc, out, err = run([report, tmp])
    kept_lines = [l for l in out.splitlines() if l.startswith("  kept ")]
    gain = [l for l in out.splitlines() if l.startswith("  gain ")]
    want_gain = "%.3fx" % (pass_us / kept_us)
    if rc != 0 or len(kept_lines) != 1 or "prophet" not in kept_lines[0] or \
            "round 7" not in kept_lines[0] or not gain or want_gain not in gain[0]:
        fail("kept plan: exit %d, %r %r (want %s)" % (rc, kept_lines, gain, want_gain))
    if "NCCL 2.28.9" not in out or "22809" in out:
        fail("NCCL's version code 22809 is not printed as 2.28.9")
    if "inside trial round" in out:
        fail("the job ended with a kept plan, the report says it ended inside a trial round")
    rc, out, _ = run([report, "--json", tmp])
    job = json.loads(out)["job"]
    g = job["gain_over_passthrough"] or {}
    if job["kept"] is None or job["kept"]["candidate"] != "prophet" or \
            abs(g.get("speedup", 0) - pass_us / kept_us) > 1e-9 or job["ended_in_trial"]:
        fail("--json kept %r gain %r" % (job["kept"], g))
    rnd = [t for t in job["trials"] if t["round"] == 7]
    if not rnd or [x["candidate"] for x in rnd[0]["timed"]] != ["passthrough", "fusion"] or \
            rnd[0]["kept"]["candidate"] != "prophet":
        fail("--json trials %r" % job["trials"])
    synth = {r: load_log(os.path.join(tmp, "prophet-rank%d.json" % r)) for r in logs}
    check_job_svg(report, tmp, outdir, synth, "kept.svg")
    trace = os.path.join(outdir, "kept.trace.json")
    run([report, "--trace", trace, tmp])
    ev = json.load(open(trace))["traceEvents"]
    marks = [e["args"]["mark"] for e in ev if e["pid"] == r0 and e.get("cat") == "plan"]
    if marks != ["trial", "kept"]:
        fail("kept trace: plan markers %r, want trial then kept" % marks)
    # one rank's log ends before its last plan: the same plans, that rank named
    path = os.path.join(tmp, "prophet-rank%d.json" % max(logs))
    doc = json.load(open(path))
    last_plan = [i for i, x in enumerate(doc["records"]) if x["kind"] == "plan"][-1]
    del doc["records"][last_plan]
    write_log(path, doc)
    rc, out, _ = run([report, tmp])
    rc2, out2, _ = run([report, "--json", tmp])
    if "rank %d's log holds only the first 1" % max(logs) not in out or \
            not json.loads(out2)["job"]["plans_agree"] or "kept              plan v" not in out:
        fail("a rank whose log ends before the last plan: %r" %
             [l for l in out.splitlines() if "plans" in l or "kept" in l])
    # one rank's plans differ: said, and that rank named
    doc = json.load(open(os.path.join(tmp, "prophet-rank%d.json" % max(logs))))
    for x in doc["records"]:
        if x["kind"] == "plan":
            x["from_iteration"] += 1
    write_log(os.path.join(tmp, "prophet-rank%d.json" % max(logs)), doc)
    rc, out, _ = run([report, tmp])
    if "DIFFER" not in out or "rank %d" % max(logs) not in out:
        fail("plans that differ between ranks are not reported")


def cmd_job(report, schema, logdir, outdir, last_step):
    ranks = sorted(int(re.match(r"prophet-rank(\d+)\.json$", f).group(1))
                   for f in os.listdir(logdir) if re.match(r"prophet-rank\d+\.json$", f))
    if len(ranks) != 8:
        fail("%d logs in %s, want 8" % (len(ranks), logdir))
        return
    validator = os.path.join(HERE, "validate_log.py")
    for r in ranks:
        path = os.path.join(logdir, "prophet-rank%d.json" % r)
        rc, out, _ = run([sys.executable, validator, schema, path, "--require-complete"])
        if rc != 0:
            fail("schema: %s" % out.strip())
    logs = {r: load_log(os.path.join(logdir, "prophet-rank%d.json" % r)) for r in ranks}
    if not any(it["before"] is not None for it in logs[ranks[0]][1].values()):
        fail("the logs carry no bytes_before")
    check_job_json(report, logdir, logs, last_step)
    check_job_text(report, logdir, logs)
    check_job_svg(report, logdir, outdir, logs)
    check_job_svg_step(report, logdir, outdir, logs)
    check_job_trace(report, logdir, outdir, logs)
    check_job_bad_inputs(report, logdir, outdir, logs)
    check_job_kept(report, logdir, outdir, logs)
    print("job of %d ranks checked" % len(ranks))


def main(argv):
    if len(argv) < 4:
        print(__doc__)
        return 2
    sub, report = argv[1], argv[2]
    if sub == "invalid":
        cmd_invalid(report, argv[3], argv[4])
    elif sub == "truncate":
        cmd_truncate(report, argv[3])
    elif sub == "cli":
        cmd_cli(report, argv[3])
    elif sub == "job":
        os.makedirs(argv[5], exist_ok=True)
        cmd_job(report, argv[3], argv[4], argv[5], int(argv[6]))
    elif sub in ("svg", "trace"):
        os.makedirs(argv[4], exist_ok=True)
        (cmd_svg if sub == "svg" else cmd_trace)(report, argv[3], argv[4])
    else:
        print(__doc__)
        return 2
    print("%s: %s" % (sub, "FAILED (%d)" % len(failures) if failures else "ok"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
