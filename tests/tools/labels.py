#!/usr/bin/python3
"""tools.labels: the CTest labels are the ones docs/testing.md names, and each selects what it names.

Reads the area table of cmake/CohortTesting.cmake (COHORT_TEST_AREAS), the "Scope labels" and
"Area labels" tables of docs/testing.md, and every registered test with its labels
(`ctest --show-only=json-v1` in the build directory). Fails, naming the label or the test, when:
  - the page and the table list different areas;
  - an area selects no test (`ctest -L area` would run nothing: scripts/test passes
    --no-tests=error, so that is a failure there too);
  - a test carries no area label;
  - a test carries a label the page does not list;
  - scripts/test no longer refuses a label that selects nothing.
Before checking the real inputs it checks doctored ones (an area dropped from the page, a test
stripped of its areas) and fails if those pass: the check can fail.

usage: labels.py SOURCE_DIR BUILD_DIR
"""
import json
import re
import subprocess
import sys


def fail(message):
    print(f"tools.labels: {message}", file=sys.stderr)
    sys.exit(1)


def table_areas(cmake_text):
    body = re.search(r"set\(COHORT_TEST_AREAS\n(.*?)\)\n", cmake_text, re.S)
    if not body:
        fail("cmake/CohortTesting.cmake: no set(COHORT_TEST_AREAS ...) table")
    return {line.split()[0] for line in body.group(1).splitlines() if line.strip()}


def page_labels(page_text, heading):
    section = re.search(rf"^### {heading}\n(.*?)(?=^#|\Z)", page_text, re.S | re.M)
    if not section:
        fail(f"docs/testing.md: no '### {heading}' section")
    return set(re.findall(r"^\| `([a-z0-9_-]+)` \|", section.group(1), re.M))


def registered_tests(build_dir):
    out = subprocess.run(["ctest", "--show-only=json-v1"], cwd=build_dir, check=True,
                         capture_output=True, text=True).stdout
    tests = {}
    for test in json.loads(out)["tests"]:
        labels = []
        for prop in test.get("properties", []):
            if prop["name"] == "LABELS":
                labels = prop["value"]
        tests[test["name"]] = set(labels)
    if not tests:
        fail(f"{build_dir}: ctest lists no tests")
    return tests


def problems(areas, page_areas, page_scopes, tests):
    found = []
    for label in sorted(areas - page_areas):
        found.append(f"area '{label}' is in cmake/CohortTesting.cmake but not in docs/testing.md")
    for label in sorted(page_areas - areas):
        found.append(f"area '{label}' is in docs/testing.md but not in cmake/CohortTesting.cmake")
    for label in sorted(areas):
        if not any(label in labels for labels in tests.values()):
            found.append(f"area '{label}' selects no test")
    for name, labels in sorted(tests.items()):
        if not labels & areas:
            found.append(f"test '{name}' has no area label (labels: {sorted(labels)})")
        for label in sorted(labels - areas - page_scopes):
            found.append(f"test '{name}' has label '{label}', which docs/testing.md does not list")
    return found


def main():
    if len(sys.argv) != 3:
        fail("usage: labels.py SOURCE_DIR BUILD_DIR")
    source, build = sys.argv[1], sys.argv[2]
    with open(f"{source}/cmake/CohortTesting.cmake", encoding="utf-8") as f:
        areas = table_areas(f.read())
    with open(f"{source}/docs/testing.md", encoding="utf-8") as f:
        page = f.read()
    page_areas, page_scopes = page_labels(page, "Area labels"), page_labels(page, "Scope labels")
    tests = registered_tests(build)
    # Positive controls: a doctored page and a doctored test must each be found.
    dropped = sorted(page_areas)[0]
    if not problems(areas, page_areas - {dropped}, page_scopes, tests):
        fail(f"control: an area dropped from the page ('{dropped}') went unnoticed")
    stripped = dict(tests)
    victim = sorted(stripped)[0]
    stripped[victim] = stripped[victim] - areas
    if not problems(areas, page_areas, page_scopes, stripped):
        fail(f"control: test '{victim}' stripped of its areas went unnoticed")
    found = problems(areas, page_areas, page_scopes, tests)
    with open(f"{source}/scripts/test", encoding="utf-8") as f:
        if "--no-tests=error" not in f.read():
            found.append("scripts/test does not pass --no-tests=error to ctest")
    if found:
        fail("; ".join(found))
    print(f"tools.labels: {len(areas)} areas and {len(page_scopes)} scope labels over "
          f"{len(tests)} tests, as docs/testing.md lists them")


if __name__ == "__main__":
    main()
