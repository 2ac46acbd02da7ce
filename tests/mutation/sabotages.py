#!/usr/bin/python3
"""The reader of tests/mutation/sabotages.txt, for scripts/mutate (which says what each command is
for; the list's header gives its format).

  sabotages.py select LIST [ID,ID...]        id, file, tests, what of each chosen entry (TSV);
                                             exit 2 for an id the list does not have
  sabotages.py stale LIST ROOT [ID,ID...]    each chosen entry's `from` occurs once in ROOT/file
  sabotages.py apply LIST ROOT ID            replaces that one occurrence by `to` in ROOT/file
  sabotages.py check LIST ROOT BUILD         --check: stale, every `tests` selects a test in BUILD
                                             (ctest -N), docs/testing.md lists the same ids; and
                                             controls that prove the check can fail
  sabotages.py list LIST [BUILD] [markdown]  the list, as text or as docs/testing.md's table rows
                                             (tests by name when BUILD lists them)
  sabotages.py json BASELINE RESULTS META... the results of a run as JSON (scripts/mutate --json)
"""
import json
import os
import re
import subprocess
import sys

KEYS = ("file", "what", "tests", "from", "to")
DOCS = "docs/testing.md"
SECTION = "## The mutation check"


def die(message, code=1):
    print(f"sabotages: {message}", file=sys.stderr)
    sys.exit(code)


def parse(path):
    entries, current = [], None
    with open(path, encoding="utf-8") as f:
        for number, raw in enumerate(f, 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            where = f"{path}:{number}"
            header = re.fullmatch(r"\[([a-z0-9_]+)\]", line)
            if header:
                current = {"id": header.group(1), "at": where}
                entries.append(current)
                continue
            pair = re.fullmatch(r"([a-z]+)\s*=(.*)", line)
            if not pair or current is None:
                die(f"{where}: expected [id] or `key = value`, got: {line}")
            key, value = pair.group(1), pair.group(2).strip()
            if key not in KEYS:
                die(f"{where}: unknown key '{key}' (keys: {', '.join(KEYS)})")
            if key in current:
                die(f"{where}: '{key}' given twice for [{current['id']}]")
            current[key] = value
    seen = set()
    for e in entries:
        for key in KEYS:
            if not e.get(key):
                die(f"{e['at']}: [{e['id']}] has no '{key}'")
            if "\t" in e[key]:
                die(f"{e['at']}: [{e['id']}]'s '{key}' holds a tab")
        if e["id"] in seen:
            die(f"{e['at']}: id '{e['id']}' listed twice")
        seen.add(e["id"])
        if not e["file"].startswith("src/") or ".." in e["file"].split("/"):
            die(f"{e['at']}: [{e['id']}]'s file {e['file']} is not under src/")
        if e["from"] == e["to"]:
            die(f"{e['at']}: [{e['id']}]'s `to` is its `from`: no sabotage")
    if not entries:
        die(f"{path}: no sabotages")
    return entries


def choose(entries, ids):
    if not ids:
        return entries
    wanted = [i for i in ids.split(",") if i]
    known = {e["id"]: e for e in entries}
    unknown = [i for i in wanted if i not in known]
    if unknown:
        die(f"no sabotage {', '.join(unknown)} (scripts/mutate --list shows them)", 2)
    return [known[i] for i in wanted]


def read(path):
    with open(path, encoding="utf-8", newline="") as f:
        return f.read()


def occurrences(root, entry, text=None):
    path = os.path.join(root, entry["file"])
    if text is None:
        if not os.path.isfile(path):
            return None
        text = read(path)
    return text.count(entry["from"])


def stale(root, entries):
    problems = []
    for e in entries:
        n = occurrences(root, e)
        if n is None:
            problems.append(f"[{e['id']}] {e['file']}: no such file")
        elif n != 1:
            problems.append(f"[{e['id']}] {e['file']}: `{e['from']}` occurs {n} times, not once")
    return problems


def selected(build, regex):
    """The tests `ctest -R regex` runs, fixtures' setup and cleanup left out."""
    out = subprocess.run(["ctest", "-N", "-R", regex, "-FA", ".*"], cwd=build,
                         capture_output=True, text=True)
    if out.returncode != 0:
        die(f"ctest -N -R '{regex}' in {build}: exit {out.returncode}: {out.stderr.strip()}")
    return re.findall(r"^\s*Test\s+#\d+: (\S+)$", out.stdout, re.M)


def docs_ids(root):
    text = read(os.path.join(root, DOCS))
    start = text.find(f"\n{SECTION}\n")
    if start < 0:
        die(f"{DOCS}: no '{SECTION}' section")
    body = text[start + len(SECTION) + 2:]
    end = re.search(r"^## ", body, re.M)
    body = body[:end.start()] if end else body
    return re.findall(r"^\| `([a-z0-9_]+)` \|", body, re.M)


def check(path, root, build):
    entries = parse(path)
    problems = stale(root, entries)
    counts = {}
    for e in entries:
        counts[e["id"]] = len(selected(build, e["tests"]))
        if counts[e["id"]] == 0:
            problems.append(f"[{e['id']}] tests `{e['tests']}` selects no test in {build}")
    listed = docs_ids(root)
    ids = [e["id"] for e in entries]
    for i in sorted(set(ids) - set(listed)):
        problems.append(f"[{i}] is not in {DOCS}'s table ({SECTION})")
    for i in sorted(set(listed) - set(ids)):
        problems.append(f"{DOCS}'s table lists '{i}', which {os.path.relpath(path, root)} does not")
    # Controls: a line that is not in the file and a pattern that names no test are found.
    first = dict(entries[0], **{"from": entries[0]["from"] + " /* not in the file */"})
    if not stale(root, [first]):
        problems.append("control: a `from` that is not in its file went unnoticed")
    if selected(build, r"^mutate\.check\.no_such_test$"):
        problems.append("control: a pattern that names no test selected one")
    if problems:
        die("the list is stale:\n  " + "\n  ".join(problems))
    print(f"sabotages: {len(entries)} sabotages, each `from` once in its file; tests selected: " +
          ", ".join(f"{i} {counts[i]}" for i in ids) + f"; {DOCS} lists the same ids")


def show(path, build, markdown):
    for e in parse(path):
        names = selected(build, e["tests"]) if build and os.path.isdir(build) else []
        tests = ", ".join(f"`{n}`" for n in names) or f"`{e['tests']}`".replace("|", "\\|")
        if markdown:
            print(f"| `{e['id']}` | {e['what']} (`{e['file']}`) | {tests} |")
        else:
            print(f"{e['id']}\n  file:  {e['file']}\n  what:  {e['what']}\n  tests: {e['tests']}"
                  + (f" ({', '.join(names)})" if names else "") +
                  f"\n  from:  {e['from']}\n  to:    {e['to']}")


def apply(path, root, ident):
    (e,) = choose(parse(path), ident)
    target = os.path.join(root, e["file"])
    text = read(target)
    if text.count(e["from"]) != 1:
        die(f"[{ident}] {e['file']}: `{e['from']}` occurs {text.count(e['from'])} times, not once")
    with open(target, "w", encoding="utf-8", newline="") as f:
        f.write(text.replace(e["from"], e["to"], 1))


def results_json(baseline, results, meta):
    """BASELINE: name TAB status TAB seconds lines; RESULTS: id TAB result TAB build_s TAB test_s
    TAB name:status:seconds... lines; META: key=value pairs (list=, commit=, seconds=)."""
    info = dict(m.split("=", 1) for m in meta)
    entries = {e["id"]: e for e in parse(info["list"])}

    def lines(p):
        with open(p, encoding="utf-8") as f:
            return [l.rstrip("\n").split("\t") for l in f if l.strip()]

    def test(name, status, seconds):
        return {"name": name, "status": status, "seconds": int(seconds)}

    base = [test(*row) for row in lines(baseline)]
    out = []
    for ident, result, build_s, test_s, tests in lines(results):
        e = entries[ident]
        out.append({"id": ident, "file": e["file"], "what": e["what"], "tests_regex": e["tests"],
                    "from": e["from"], "to": e["to"], "result": result,
                    "build_seconds": int(build_s), "test_seconds": int(test_s),
                    "tests": [test(*t.rsplit(":", 2)) for t in tests.split()]})
    caught = sum(r["result"] == "caught" for r in out)
    json.dump({"commit": info.get("commit", ""), "seconds": int(info.get("seconds", 0)),
               "baseline": {"tests": base, "ok": all(t["status"] == "passed" for t in base)},
               "sabotages": out, "caught": caught, "total": len(out),
               "all_caught": bool(out) and caught == len(out)}, sys.stdout, indent=1)
    print()


def main():
    args = sys.argv[1:]
    if not args:
        die(__doc__.strip(), 2)
    command, rest = args[0], args[1:]
    if command == "select" and len(rest) in (1, 2):
        for e in choose(parse(rest[0]), rest[1] if len(rest) == 2 else ""):
            print("\t".join((e["id"], e["file"], e["tests"], e["what"])))
    elif command == "stale" and len(rest) in (2, 3):
        problems = stale(rest[1], choose(parse(rest[0]), rest[2] if len(rest) == 3 else ""))
        for p in problems:
            print(f"stale: {p}")
        sys.exit(1 if problems else 0)
    elif command == "apply" and len(rest) == 3:
        apply(*rest)
    elif command == "check" and len(rest) == 3:
        check(*rest)
    elif command == "list" and 1 <= len(rest) <= 3:
        markdown = "markdown" in rest[1:]
        build = next((r for r in rest[1:] if r != "markdown"), "")
        show(rest[0], build, markdown)
    elif command == "json" and len(rest) >= 2:
        results_json(rest[0], rest[1], rest[2:])
    else:
        die(__doc__.strip(), 2)


if __name__ == "__main__":
    main()
