"""The contract of docs/exit-codes.md, checked on one run of the real `cohort`: the exit code,
exactly one `cohort: error:` line (on failure), the words it must name, peak RSS from
/usr/bin/time, an answer within a time limit, and no escape sequence on the terminal. Shared by
the tests of tests/hostile/."""
import os
import shutil
import subprocess
import sys

# LibTorch alone maps about 170 MB; a claimed 2^40-element tensor or 2^28 samples would be far more.
# A sanitizer build needs more (ASan's shadow and quarantine: the gzip bomb peaks at 1 GB there):
# COHORT_HOSTILE_MAX_RSS_MB=2000 (docs/testing-hostile-input.md).
MAX_RSS_MB = int(os.environ.get("COHORT_HOSTILE_MAX_RSS_MB", "700"))


class Contract:
    def __init__(self, cohort):
        self.cohort = cohort
        self.failures = []

    def run(self, case, args, code, needles=(), timeout=60, lines=1, max_rss_mb=MAX_RSS_MB):
        """Runs cohort ARGS; returns the CompletedProcess (bytes), or None after a hang."""
        cmd = ["/usr/bin/time", "-f", "%M", "-o", "rss.txt", self.cohort] + args
        try:
            proc = subprocess.run(cmd, capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            self.fail(f"{case}: no answer within {timeout} s (a hang)")
            return None
        out, err = proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace")
        rss_mb = int(open("rss.txt").read().split()[-1]) / 1024
        errors = [l for l in err.splitlines() if l.startswith("cohort: error:")]
        problems = []
        if proc.returncode != code:
            problems.append(f"exit {proc.returncode}, expected {code}")
        if code != 0 and lines is not None and len(errors) != lines:
            problems.append(f"{len(errors)} error lines, expected {lines}: {err[-300:]}")
        problems += [f"output lacks '{n}'" for n in needles if n not in out + err]
        if rss_mb > max_rss_mb:
            problems.append(f"peak RSS {rss_mb:.0f} MB > {max_rss_mb} MB")
        if b"\x1b" in proc.stdout + proc.stderr or b"\xc2\x9b" in proc.stdout + proc.stderr:
            problems.append("an escape sequence reached the terminal")
        last = (errors or err.strip().splitlines() or [""])[-1]
        print(f"{'ok  ' if not problems else 'FAIL'} {case}: exit {proc.returncode}, "
              f"{rss_mb:.0f} MB: {last[:220]}")
        if problems:
            self.failures.append(f"{case}: {'; '.join(problems)}")
        return proc

    def fail(self, problem):
        print(f"FAIL {problem}")
        self.failures.append(problem)

    def verdict(self, what):
        if self.failures:
            print("FAILED:\n  " + "\n  ".join(self.failures))
            raise SystemExit(1)
        print(f"all {what} hold the contract")


def start(usage):
    """From `SCRIPT COHORT WORKDIR`: an empty WORKDIR as the current directory, and a Contract."""
    if len(sys.argv) != 3:
        raise SystemExit(f"usage: {usage}")
    cohort, work = os.path.abspath(sys.argv[1]), sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    os.chdir(work)
    return Contract(cohort)
