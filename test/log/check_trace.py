#!/usr/bin/env python3
"""Checks a Chrome trace (Trace Event Format) written by libprophet.so or prophet-report --trace:
valid JSON, a traceEvents array, every event with ph, ts, pid, tid, name; complete events ("X")
with a non-negative dur; gates as async "b"/"e" pairs with matching ids; the lanes the format promises (network, arrivals, gates when present);
X events properly nested per lane (Perfetto drops overlapping ones).
usage: check_trace.py TRACE [--min-blocks N] [--want-gates]"""
import json
import sys


def main(argv):
    path = argv[1]
    min_blocks = int(argv[argv.index("--min-blocks") + 1]) if "--min-blocks" in argv else 1
    try:
        doc = json.load(open(path))
        ev = doc["traceEvents"]
        assert isinstance(ev, list), "traceEvents is not an array"
        lanes, blocks, gates, arrivals, opened = {}, 0, 0, 0, {}
        for i, e in enumerate(ev):
            for k in ("ph", "ts", "pid", "tid", "name"):
                assert k in e, "event %d lacks %r" % (i, k)
            assert isinstance(e["ts"], (int, float)), "event %d: ts not a number" % i
            assert isinstance(e["pid"], int) and isinstance(e["tid"], int), "event %d: pid/tid" % i
            if e["ph"] == "M" and e["name"] == "thread_name":
                lanes[(e["pid"], e["tid"])] = e["args"]["name"]
            if e["ph"] == "X":
                assert isinstance(e.get("dur"), (int, float)) and e["dur"] >= 0, "event %d: dur" % i
                if e.get("cat") == "block":
                    blocks += 1
                    assert lanes.get((e["pid"], e["tid"]), "").startswith("network comm"), \
                        "event %d: block outside a network lane" % i
                elif e.get("cat") == "gate":
                    gates += 1
            if e["ph"] in ("b", "e"):
                assert e.get("cat") == "gate" and "id" in e, "event %d: async event without id" % i
                key = (e["pid"], e["id"])
                if e["ph"] == "b":
                    assert key not in opened, "event %d: gate id reused" % i
                    opened[key] = e["ts"]
                    gates += 1
                else:
                    assert key in opened and e["ts"] >= opened.pop(key), "event %d: gate end" % i
            if e["ph"] == "i":
                arrivals += e.get("cat") == "arrival"
        # nesting: on each lane, X events must not partially overlap
        per = {}
        for e in ev:
            if e["ph"] == "X":
                per.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
        for lane, spans in per.items():
            spans.sort()
            for (a0, a1), (b0, b1) in zip(spans, spans[1:]):
                assert b0 >= a1 or b1 <= a1, "lane %r: overlapping X events at %r" % (lane, b0)
        assert not opened, "%d gates never end" % len(opened)
        assert blocks >= min_blocks, "only %d block events" % blocks
        assert arrivals > 0, "no arrival events"
        if "--want-gates" in argv:
            assert gates > 0, "no gate events"
    except (AssertionError, KeyError, ValueError, OSError, TypeError) as e:
        print("%s: INVALID trace: %s" % (path, e))
        return 1
    print("%s: valid trace (%d events, %d blocks, %d gates, %d arrivals, %d lanes)"
          % (path, len(ev), blocks, gates, arrivals, len(lanes)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
