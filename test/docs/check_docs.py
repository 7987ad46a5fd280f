#!/usr/bin/env python3
"""Checks of the user documents (standard library only).

  check_docs.py clean --build BUILD FILE...
      FILE (README.md, docs/benchmarks.md) speaks to users: no issue numbers, no commit hashes, no
      dates, no name of a registered test (the list from `ctest --test-dir BUILD -N`), no words of
      the project's own history ("the brief", "invariant N", "the former block mode").
  check_docs.py history --src SRC [--pending FILE]
      The product's documents (README.md, bpf/README.md, preload/README.md, every Markdown file of
      SRC/docs) and the comments of the non-test C sources (*.c, *.h outside test/ and dev/) hold no
      lab notes: no issue numbers ("issue 37", "#37"), commit hashes, dates or before/now histories
      ("is no longer a", "used to", "until the fix", ...), no pointer outside the repository, and no
      heading named after an issue; in the documents, no "invariant N" or "rule N" (the shared
      numbering is I1..I5 and H1..H11). Histories
      belong in dev/history/. FILE lists findings known and owned elsewhere, one
      "path:text" a line ('#' comments): each must still be found (a fixed one is taken off the list),
      and is reported as pending, not failed.
  check_docs.py links FILE...
      Every relative Markdown link [text](target) in FILE points at an existing file, and a
      #fragment at a heading of the target (GitHub's anchors). Links inside code are ignored.
  check_docs.py installed --cmake CMAKE --build BUILD --src SRC
      Installs the docs component of BUILD into a temporary prefix; its share/doc/prophet must hold
      exactly README.md, bpf/README.md and every file of SRC/docs (nothing of SRC/dev; a package's
      copyright and changelog files aside), and the links of its Markdown files must hold there.
  check_docs.py design --build BUILD --src SRC [DOC]
      DOC (default SRC/docs/design.md): every row of its table "The closed loop's constants"
      (`NAME` | value | `file`) equals the #define, enum member or static const NAME of that file
      (an expression of other constants of the file is evaluated, integer division as C's); every
      test named in its table "Invariants, their mechanisms and their tests" is registered
      (`ctest --test-dir BUILD -N`; a name with * matches as a glob).
  check_docs.py testlists --build BUILD --src SRC
      Every README.md under SRC/test with a heading "Tests (ctest, `-R '^PREFIX\.'`)" lists its
      tests honestly: each test name in the first column of the table under it is registered
      ({a,b} and <a,b> alternatives, <word> any one name part, * any text), and every registered
      test PREFIX.* matches a row.
Exit status 1 with one line per finding.
"""
import fnmatch
import os
import re
import subprocess
import sys
import tempfile

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
HISTORY = [
    (re.compile(r"\bissues? #?\d+", re.I), "an issue number"),
    (re.compile(r"(?<![\w/.(-])(?<!call )#\d+\b"), "an issue number"),
    (re.compile(r"(?<![\w/.-])(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}(?:-dirty)?(?![\w-])"),
     "a commit hash"),
    (re.compile(r"\b20\d\d-\d\d-\d\d\b"), "a date"),
    (re.compile(r"\bthe brief\b", re.I), "the project's brief"),
    (re.compile(r"\binvariant \d", re.I), "an invariant number"),
    (re.compile(r"\bformer (block )?mode\b", re.I), "project history"),
]


def prose_lines(text):
    """(line number, line) of the lines outside fenced code blocks."""
    fenced = False
    for n, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            yield n, line


def anchors(path):
    """GitHub's anchors of a Markdown file's headings."""
    seen = {}
    out = set()
    with open(path, encoding="utf-8") as f:
        for _, line in prose_lines(f.read()):
            m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
            if not m:
                continue
            slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
            k = seen.get(slug, 0)
            seen[slug] = k + 1
            out.add(slug if k == 0 else f"{slug}-{k}")
    return out


def check_links(files):
    bad = []
    for path in files:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for n, line in prose_lines(text):
            line = re.sub(r"`[^`]*`", "", line)  # inline code is not a link
            for target in LINK.findall(line):
                if re.match(r"[a-z]+:", target):
                    continue  # http:, https:, mailto:
                file_part, _, frag = target.partition("#")
                dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part \
                    else path
                if not os.path.isfile(dest):
                    bad.append(f"{path}:{n}: link to {target}: no such file")
                elif frag and dest.endswith(".md") and frag not in anchors(dest):
                    bad.append(f"{path}:{n}: link to {target}: no heading with that anchor")
    return bad


def test_names(build):
    out = subprocess.run(["ctest", "--test-dir", build, "-N"], capture_output=True, text=True,
                         check=True).stdout
    names = re.findall(r"^\s*Test\s+#\d+:\s+(\S+)", out, re.M)
    if not names:
        sys.exit(f"check_docs: no test listed by ctest --test-dir {build} -N")
    return names


def check_clean(build, files):
    names = test_names(build)
    named = re.compile(r"(?<![\w.])(" + "|".join(map(re.escape, names)) + r")(?![\w.])")
    bad = []
    for path in files:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for n, line in enumerate(text.splitlines(), 1):
            for rx, what in HISTORY:
                m = rx.search(line)
                if m:
                    bad.append(f"{path}:{n}: {what}: {m.group(0)!r}")
            for m in named.finditer(line):
                bad.append(f"{path}:{n}: the name of a test: {m.group(1)!r}")
    return bad


# Lab notes: what a maintainers' history says, not what the product does. The patterns of HISTORY
# above, and these phrases of a before/now story.
BEFORE_NOW = [
    (re.compile(r"\bis no longer (?:a|an|the)\b", re.I), "a before/now history"),
    (re.compile(r"\bused to\b", re.I), "a before/now history"),
    (re.compile(r"\bformerly\b|\bthe former\b", re.I), "a before/now history"),
    (re.compile(r"\bpreviously\b", re.I), "a before/now history"),
    (re.compile(r"\b(?:fixed|changed) since\b|\bsince the (?:fix|change)\b", re.I),
     "a before/now history"),
    (re.compile(r"\b(?:until|before|after) (?:the|this) (?:fix|change|work|refactor)\b", re.I),
     "a before/now history"),
    (re.compile(r"\bthe (?:old|new) (?:code|build|preload)\b", re.I), "a before/now history"),
    (re.compile(r"\buntil (?:issue|commit)\b", re.I), "a before/now history"),
    (re.compile(r"(?:^|[.;:(]\s+|^\W*)Before,\s"), "a before/now history"),
    (re.compile(r"\b(?:since then|until then|until now)\b", re.I), "a before/now history"),
]
OUTSIDE = [(re.compile(r"\.\./shared/|/work/(?:main|shared)\b"), "a pointer outside the repository")]
LAB = [r for r in HISTORY if r[1] in ("an issue number", "a commit hash", "a date")] + BEFORE_NOW \
    + OUTSIDE
# The documents number the invariants I1..I5 and the holding engine's rules H1..H11 (docs/design.md,
# docs/completion-holding.md); "invariant 2" or "rule 4" is a number of another scheme (the
# brief's, or an older list's) that no document resolves any more.
OLD_NUMBER = (re.compile(r"\b(?:invariants?|rules?) \d+(?![\d.])", re.I),
              "a number outside the shared scheme (I1..I5, H1..H11)")
ISSUE_HEADING = re.compile(r"^#{1,6}\s.*\bissues?\s+#?\d+", re.I)


def c_comments(text):
    """(line number, comment text) of every comment line of a C source."""
    out, i, n, line = [], 0, len(text), 1
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif c == '"' or c == "'":
            q, i = c, i + 1
            while i < n and text[i] != q:
                if text[i] == "\\":
                    i += 1
                elif text[i] == "\n":
                    line += 1
                i += 1
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append((line, text[i + 2:j]))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j
            for k, part in enumerate(text[i + 2:j].split("\n")):
                out.append((line + k, part))
            line += text.count("\n", i, j)
            i = j + 2
        else:
            i += 1
    return out


def product_files(src):
    docs = [os.path.join(src, "README.md"), os.path.join(src, "bpf", "README.md"),
            os.path.join(src, "preload", "README.md")]
    docs += sorted(os.path.join(src, "docs", f) for f in os.listdir(os.path.join(src, "docs"))
                   if f.endswith(".md"))
    csrc = []
    for d, dirs, fs in os.walk(src):
        rel = os.path.relpath(d, src)
        top = rel.split(os.sep)[0]
        if top in ("test", "dev", ".git") or top.startswith("build") or (rel != "." and rel.startswith(".")):
            dirs[:] = []
            continue
        csrc += sorted(os.path.join(d, f) for f in fs if f.endswith((".c", ".h")))
    return [d for d in docs if os.path.isfile(d)], sorted(csrc)


SPLIT_ISSUE = (re.compile(r"\bissues?\s*$", re.I), re.compile(r"^[\s*/]*#?\d+\b"))


def split_issue(lines):
    """(line number, text) of an issue number split over two lines ("... (issue" / "36's ...")."""
    for (n, a), (_, b) in zip(lines, lines[1:]):
        if SPLIT_ISSUE[0].search(a) and SPLIT_ISSUE[1].match(b):
            yield n, "issue " + SPLIT_ISSUE[1].match(b).group(0).strip(" */")


def check_history(src, pending_file):
    docs, csrc = product_files(src)
    found = []
    for path in docs:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
        for n, line in enumerate(lines, 1):
            if ISSUE_HEADING.match(line):
                found.append((path, n, "a heading named after an issue", line.strip()))
            for rx, what in LAB + [OLD_NUMBER]:
                m = rx.search(line)
                if m:
                    found.append((path, n, what, m.group(0)))
        for n, text in split_issue(list(enumerate(lines, 1))):
            found.append((path, n, "an issue number", text))
    for path in csrc:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        comments = c_comments(text)
        for n, line in comments:
            for rx, what in LAB:
                m = rx.search(line)
                if m:
                    found.append((path, n, what + " in a comment", m.group(0)))
        for n, t in split_issue(comments):
            found.append((path, n, "an issue number in a comment", t))
    pending = []
    if pending_file:
        with open(pending_file, encoding="utf-8") as f:
            for raw in f:
                raw = raw.strip()
                if raw and not raw.startswith("#"):
                    pending.append(raw)
    bad, held, used = [], [], set()
    for path, n, what, text in found:
        rel = os.path.relpath(path, src)
        key = next((p for p in pending if p.split(":", 1)[0] == rel and
                    p.split(":", 1)[1] == text), None)
        line = f"{rel}:{n}: {what}: {text!r}"
        if key is not None:
            used.add(key)
            held.append(line)
        else:
            bad.append(line)
    for p in pending:
        if p not in used:
            bad.append(f"pending entry no longer found (take it off the list): {p}")
    for h in held:
        print("pending: " + h)
    return bad


def files_under(root):
    out = set()
    for d, _, fs in os.walk(root):
        for f in fs:
            out.add(os.path.relpath(os.path.join(d, f), root))
    return out


def check_installed(cmake, build, src):
    with tempfile.TemporaryDirectory() as prefix:
        r = subprocess.run([cmake, "--install", build, "--prefix", prefix, "--component", "docs"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            return [f"cmake --install --component docs failed: {r.stdout}{r.stderr}"]
        docdir = os.path.join(prefix, "share", "doc", "prophet")
        got = files_under(docdir) if os.path.isdir(docdir) else set()
        want = {"README.md", os.path.join("bpf", "README.md")}
        want |= {os.path.join("docs", f) for f in files_under(os.path.join(src, "docs"))}
        package = {f for f in got if re.fullmatch(r"copyright|changelog(\.Debian)?(\.gz)?", f)}
        bad = [f"installed but not a user document: {f}" for f in sorted(got - want - package)]
        bad += [f"user document not installed: {f}" for f in sorted(want - got)]
        dev = files_under(os.path.join(src, "dev")) if os.path.isdir(os.path.join(src, "dev")) else set()
        devnames = {os.path.basename(f) for f in dev} - {"README.md"}
        bad += [f"a maintainers' file installed: {f}" for f in sorted(got)
                if os.path.basename(f) in devnames]
        bad += check_links(sorted(os.path.join(docdir, f) for f in got if f.endswith(".md")))
        return [b.replace(prefix, "PREFIX") for b in bad]


# ---- design: docs/design.md's constants table and invariant table against the code and ctest ----
DEFINE = re.compile(r"^\s*#\s*define\s+(\w+)(?!\()\s+(.*)$")


def c_strip(text):
    """A C source without its comments, its continuation lines joined."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return text.replace("\\\n", " ")


def c_constants(path):
    """name -> expression text of every #define, enum member and static const of a C file."""
    with open(path, encoding="utf-8") as f:
        text = c_strip(f.read())
    out = {}
    for line in text.splitlines():
        m = DEFINE.match(line)
        if m and m.group(2).strip():
            out[m.group(1)] = m.group(2).strip()
    for body in re.findall(r"\benum\b[^{;]*\{(.*?)\}", text, flags=re.S):
        prev = None
        for item in body.split(","):
            item = item.strip()
            if not item:
                continue
            name, _, val = item.partition("=")
            name = name.strip()
            if val.strip():
                out[name] = val.strip()
            else:
                out[name] = "0" if prev is None else f"({prev}) + 1"
            prev = name
    for name, val in re.findall(r"\bstatic\s+const\s+[\w\s]+?\b(\w+)\s*=\s*([^;{]+);", text):
        out[name] = val.strip()
    return out


def c_eval(expr, consts, depth=0):
    """The value of a C constant expression over consts (integer division as C's)."""
    import ast
    if depth > 20:
        raise ValueError(f"too deep: {expr}")
    expr = re.sub(r"\b(\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)[uUlLfF]+\b", r"\1", expr)
    expr = re.sub(r"\(\s*(?:unsigned|int|long|double|float|uint\d+_t|int\d+_t|size_t)\s*\)", "", expr)

    def ev(node):
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in consts:
                raise ValueError(f"unknown name {node.id}")
            return c_eval(consts[node.id], consts, depth + 1)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            v = ev(node.operand)
            return -v if isinstance(node.op, ast.USub) else v
        if isinstance(node, ast.BinOp):
            a, b = ev(node.left), ev(node.right)
            if isinstance(node.op, ast.Add):
                return a + b
            if isinstance(node.op, ast.Sub):
                return a - b
            if isinstance(node.op, ast.Mult):
                return a * b
            if isinstance(node.op, ast.Div):
                return a // b if isinstance(a, int) and isinstance(b, int) else a / b
            if isinstance(node.op, ast.LShift):
                return a << b
        raise ValueError(f"not a constant expression: {expr}")
    return ev(ast.parse(expr.strip(), mode="eval"))


def md_table(text, heading):
    """Rows (lists of cells) of the first table after the heading that starts with `heading`."""
    lines = text.splitlines()
    start = next((i for i, l in enumerate(lines) if re.match(r"#+\s+" + re.escape(heading), l)), None)
    if start is None:
        return None
    rows, seen = [], False
    for line in lines[start + 1:]:
        if re.match(r"#+\s", line):
            break
        if line.startswith("|"):
            seen = True
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not all(re.fullmatch(r":?-+:?", c) for c in cells):
                rows.append(cells)
        elif seen:
            break
    return rows[1:]  # the header row off


def backticked(cell):
    return re.findall(r"`([^`]+)`", cell)


def check_design(build, src, doc):
    with open(doc, encoding="utf-8") as f:
        text = f.read()
    bad = []
    rows = md_table(text, "The closed loop's constants")
    if not rows:
        bad.append(f"{doc}: no table under \"The closed loop's constants\"")
    cache = {}
    for cells in rows or []:
        if len(cells) < 3 or not backticked(cells[0]) or not backticked(cells[2]):
            bad.append(f"{doc}: constants table: a row without `NAME` | value | `file`: {cells}")
            continue
        name, where = backticked(cells[0])[0], backticked(cells[2])[0]
        path = os.path.join(src, where)
        if not os.path.isfile(path):
            bad.append(f"{doc}: constants table: {name}: no file {where}")
            continue
        consts = cache.setdefault(path, c_constants(path))
        if name not in consts:
            bad.append(f"{doc}: constants table: {name} is not defined in {where}")
            continue
        try:
            code = c_eval(consts[name], consts)
            table = float(cells[1].replace(",", ""))
        except (ValueError, SyntaxError, ZeroDivisionError) as e:
            bad.append(f"{doc}: constants table: {name}: cannot compare ({e})")
            continue
        if abs(code - table) > 1e-9 * max(1.0, abs(code)):
            bad.append(f"{doc}: constants table: {name} is {cells[1]} in the table but "
                       f"{consts[name]} = {code:g} in {where}")
    names = set(test_names(build))
    rows = md_table(text, "Invariants, their mechanisms and their tests")
    if not rows:
        bad.append(f"{doc}: no table under \"Invariants, their mechanisms and their tests\"")
    for cells in rows or []:
        tests = backticked(cells[-1])
        if not tests:
            bad.append(f"{doc}: invariant table: row {cells[0]} names no test")
        for t in tests:
            if not any(fnmatch.fnmatchcase(n, t) for n in names):
                bad.append(f"{doc}: invariant table: row {cells[0]}: {t} is not a registered test "
                           f"(ctest -N)")
    return bad


# ---- test READMEs: the tests they list against ctest -N ----
TESTS_HEADING = re.compile(r"^#+\s+Tests\b.*-R\s+'\^(\w+)\\\.'")


def row_pattern(name):
    """A row's test name as a regular expression: {a,b} and <a,b> alternatives, <word> any one
    name part, * any text."""
    out, i = "", 0
    while i < len(name):
        c = name[i]
        if c in "{<":
            j = name.index("}" if c == "{" else ">", i)
            inner = name[i + 1:j]
            if c == "<" and "," not in inner:
                out += r"[^.]+"
            else:
                out += "(?:" + "|".join(re.escape(a) for a in inner.split(",")) + ")"
            i = j + 1
        elif c == "*":
            out += ".*"
            i += 1
        else:
            out += re.escape(c)
            i += 1
    return re.compile(out + r"\Z")


def check_test_readmes(build, src):
    names = test_names(build)
    bad, found = [], 0
    for d, dirs, fs in os.walk(os.path.join(src, "test")):
        if "README.md" not in fs:
            continue
        path = os.path.join(d, "README.md")
        rel = os.path.relpath(path, src)
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
        heads = [(i, TESTS_HEADING.match(l)) for i, l in enumerate(lines)]
        heads = [(i, m.group(1)) for i, m in heads if m]
        for i, prefix in heads:
            found += 1
            rows = md_table("\n".join(lines[i:]), lines[i].lstrip("#").strip())
            pats = []
            for cells in rows or []:
                for t in backticked(cells[0]):
                    if "." not in t:
                        continue
                    p = row_pattern(t)
                    pats.append(p)
                    if not any(p.match(n) for n in names):
                        bad.append(f"{rel}: row {t}: no registered test has this name")
            for n in names:
                if n.startswith(prefix + ".") and not any(p.match(n) for p in pats):
                    bad.append(f"{rel}: registered test {n} is in no row of its tests table")
    if not found:
        bad.append("no test README with a \"## Tests (ctest, `-R '^prefix\\.'`)\" table found")
    return bad


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    cmd, args = argv[1], argv[2:]
    opts = {}
    while args and args[0].startswith("--"):
        opts[args[0][2:]] = args[1]
        args = args[2:]
    if cmd == "clean":
        bad = check_clean(opts["build"], args)
    elif cmd == "history":
        bad = check_history(opts["src"], opts.get("pending"))
    elif cmd == "links":
        bad = check_links(args)
    elif cmd == "design":
        bad = check_design(opts["build"], opts["src"], args[0] if args else
                           os.path.join(opts["src"], "docs", "design.md"))
    elif cmd == "testlists":
        bad = check_test_readmes(opts["build"], opts["src"])
    elif cmd == "installed":
        bad = check_installed(opts["cmake"], opts["build"], opts["src"])
    else:
        sys.exit(__doc__)
    for b in bad:
        print(b)
    print(f"check_docs {cmd}: {'FAIL' if bad else 'PASS'} ({len(bad)} finding(s))")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
