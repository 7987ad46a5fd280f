#!/usr/bin/env python3
"""Validates a prophet-log/1 file against docs/log-schema.json (standard library only).

Implements the JSON Schema keywords the schema uses: $ref (local), type, const, enum, required,
properties, additionalProperties (false), items, minimum, maximum, pattern, oneOf.
Also checks what a schema cannot say: per-record counts match their arrays, plan blocks tile the
calls, a call's completion is not before its launch.
usage: validate_log.py SCHEMA LOG [--require-complete] [--min-iterations N]
"""
import json
import re
import sys

TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


class Invalid(Exception):
    pass


def resolve(root, ref):
    if not ref.startswith("#/"):
        raise Invalid("unsupported $ref " + ref)
    node = root
    for part in ref[2:].split("/"):
        node = node[part]
    return node


def check(root, schema, v, path):
    if "$ref" in schema:
        check(root, resolve(root, schema["$ref"]), v, path)
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(TYPES[t](v) for t in types):
            raise Invalid("%s: expected %s, got %r" % (path, "/".join(types), v))
    if "const" in schema and not (v == schema["const"] and type(v) is type(schema["const"])):
        raise Invalid("%s: expected %r, got %r" % (path, schema["const"], v))
    if "enum" in schema and not any(v == e and type(v) is type(e) for e in schema["enum"]):
        raise Invalid("%s: %r not one of %r" % (path, v, schema["enum"]))
    if "minimum" in schema and TYPES["number"](v) and v < schema["minimum"]:
        raise Invalid("%s: %r below minimum %r" % (path, v, schema["minimum"]))
    if "maximum" in schema and TYPES["number"](v) and v > schema["maximum"]:
        raise Invalid("%s: %r above maximum %r" % (path, v, schema["maximum"]))
    if "pattern" in schema and isinstance(v, str) and not re.search(schema["pattern"], v):
        raise Invalid("%s: %r does not match %s" % (path, v, schema["pattern"]))
    if isinstance(v, dict):
        for k in schema.get("required", []):
            if k not in v:
                raise Invalid("%s: missing key %r" % (path, k))
        props = schema.get("properties", {})
        for k, sub in v.items():
            if k in props:
                check(root, props[k], sub, "%s.%s" % (path, k))
            elif schema.get("additionalProperties", True) is False:
                raise Invalid("%s: unexpected key %r" % (path, k))
    if isinstance(v, list) and "items" in schema:
        for i, sub in enumerate(v):
            check(root, schema["items"], sub, "%s[%d]" % (path, i))
    if "oneOf" in schema:
        errors, ok = [], 0
        for alt in schema["oneOf"]:
            try:
                check(root, alt, v, path)
                ok += 1
            except Invalid as e:
                errors.append(str(e))
        if ok != 1:
            kind = v.get("kind") if isinstance(v, dict) else None
            why = errors[0] if errors else ""
            for alt, err in zip(schema["oneOf"], [None] * len(schema["oneOf"])):
                target = resolve(root, alt["$ref"]) if "$ref" in alt else alt
                if target.get("properties", {}).get("kind", {}).get("const") == kind:
                    try:
                        check(root, target, v, path)
                    except Invalid as e:
                        why = str(e)
            raise Invalid("%s: matches %d record kinds (want 1): %s" % (path, ok, why))


def semantic(doc):
    if doc["meta"]["rank"] >= doc["meta"]["nranks"]:
        raise Invalid("$.meta.rank: not below nranks")
    before = {}
    for i, r in enumerate(doc["records"]):
        if r.get("iteration", 0) >= 2 ** 62 or r.get("from_iteration", 0) >= 2 ** 62:
            raise Invalid("records[%d]: iteration out of range" % i)
        where = "records[%d]" % i
        k = r["kind"]
        if k == "profile":
            if len(r["calls"]) != r["n_calls"] or len(r["steps"]) != r["n_steps"]:
                raise Invalid(where + ": n_calls/n_steps do not match the arrays")
            for j, c in enumerate(r["calls"]):
                if c["index"] != j:
                    raise Invalid("%s.calls[%d]: index %d" % (where, j, c["index"]))
            for j, st in enumerate(r["steps"]):
                if not st["first"] <= st["last"] < r["n_calls"]:
                    raise Invalid("%s.steps[%d]: outside the calls" % (where, j))
        elif k == "sample":
            if r["taken_at"] < r["iteration"]:
                raise Invalid(where + ": taken_at before the iteration it times")
        elif k == "plan":
            if len(r["blocks"]) != r["n_blocks"]:
                raise Invalid(where + ": n_blocks does not match blocks")
            nxt = 0
            for j, b in enumerate(r["blocks"]):
                if b["first"] != nxt or b["last"] < b["first"]:
                    raise Invalid("%s.blocks[%d]: blocks must tile the calls" % (where, j))
                nxt = b["last"] + 1
            if r["n_blocks"] and nxt != r["n_calls"]:
                raise Invalid(where + ": blocks do not cover n_calls")
        elif k == "iteration":
            for j, c in enumerate(r["calls"]):
                if c["launch_us"] and c["complete_us"] and c["complete_us"] < c["launch_us"]:
                    raise Invalid("%s.calls[%d]: complete before launch" % (where, j))
            if "bytes_before" in r:
                before[r["iteration"]] = r["bytes_before"]
    # bytes_before counts the bytes of the calls before each iteration in program order: it grows
    # with the iteration number
    last = -1
    for it in sorted(before):
        if before[it] < last:
            raise Invalid("iteration %d: bytes_before %d below an earlier iteration's %d"
                          % (it, before[it], last))
        last = before[it]


def no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise Invalid("duplicate key in an object")
    return dict(pairs)


def no_constant(name):
    raise Invalid("%s is not JSON" % name)


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    schema = json.load(open(argv[1]))
    min_iters = 0
    if "--min-iterations" in argv:
        min_iters = int(argv[argv.index("--min-iterations") + 1])
    try:
        with open(argv[2]) as f:
            doc = json.load(f, object_pairs_hook=no_duplicates, parse_constant=no_constant)
        check(schema, schema, doc, "$")
        semantic(doc)
        if "--require-complete" in argv and doc.get("complete") is not True:
            raise Invalid("$.complete: the log was not closed")
        iters = {r["iteration"] for r in doc["records"] if r["kind"] == "iteration"}
        if len(iters) < min_iters:
            raise Invalid("only %d iterations logged, want >= %d" % (len(iters), min_iters))
    except (Invalid, ValueError, OSError) as e:
        print("%s: INVALID: %s" % (argv[2], e))
        return 1
    print("%s: valid prophet-log/1 (%d records, %d iterations)" % (argv[2], len(doc["records"]), len(iters)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
