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
  trace REPORT LOG OUTDIR         --trace: valid Trace Event Format (check_trace.py)"""
import json
import os
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
                 ["--iteration", "3", log], ["-z", log], ["--trace"]):
        expect_one_line_error([report] + args, 2, "prophet-report", "args %r" % args)
    expect_one_line_error([report, "/nonexistent/prophet-rank0.json"], 1,
                          "/nonexistent/prophet-rank0.json", "missing file")
    expect_one_line_error([report, log, "/nonexistent/x.json"], 1, "/nonexistent/x.json",
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
