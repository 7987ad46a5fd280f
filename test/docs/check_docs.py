#!/usr/bin/env python3
"""Checks of the user documents (standard library only).

  check_docs.py clean --build BUILD FILE...
      FILE (README.md, docs/benchmarks.md) speaks to users: no issue numbers, no commit hashes, no
      dates, no name of a registered test (the list from `ctest --test-dir BUILD -N`), no words of
      the project's own history ("the brief", "invariant N", "the former block mode").
  check_docs.py links FILE...
      Every relative Markdown link [text](target) in FILE points at an existing file, and a
      #fragment at a heading of the target (GitHub's anchors). Links inside code are ignored.
  check_docs.py installed --cmake CMAKE --build BUILD --src SRC
      Installs the docs component of BUILD into a temporary prefix; its share/doc/prophet must hold
      exactly README.md, bpf/README.md and every file of SRC/docs (nothing of SRC/dev; a package's
      copyright and changelog files aside), and the links of its Markdown files must hold there.
Exit status 1 with one line per finding.
"""
import os
import re
import subprocess
import sys
import tempfile

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
HISTORY = [
    (re.compile(r"\bissues? #?\d+", re.I), "an issue number"),
    (re.compile(r"(?<![\w/.(-])#\d+\b"), "an issue number"),
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
    elif cmd == "links":
        bad = check_links(args)
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
