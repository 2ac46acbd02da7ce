#!/usr/bin/env python3
"""Every command of `cohort help` has its page, cohort-COMMAND.1, and every option that the command
and each of its subcommands list in --help appears in that page. The options are read here from
--help with a parser of this test's own, not scripts/cli-docs's.
    man_pages.py COHORT MAN1_DIR"""
import re, subprocess, sys

cohort, man1 = sys.argv[1], sys.argv[2]

def help_text(*args):
    r = subprocess.run([cohort, *args, "--help"], capture_output=True, text=True)
    return r.stdout + r.stderr

listing = subprocess.run([cohort, "help"], capture_output=True, text=True, check=True).stdout
commands = re.findall(r"^  ([a-z]+) +\S", listing.split("commands:")[1].split("\n\n")[0], re.M)
commands = [c for c in commands if c != "help"]
assert len(commands) >= 10, commands
failures, checked = 0, 0
for command in commands:
    try:
        page = open(f"{man1}/cohort-{command}.1").read().replace("\\e", "\\").replace("\\-", "-")
    except OSError as error:
        print(f"FAIL: {command}: {error}")
        failures += 1
        continue
    top = help_text(command)
    texts = [top]
    for alternatives in re.findall(rf"cohort {command} <([a-z|-]+\|[a-z|-]+)>", top):
        texts += [help_text(command, sub) for sub in alternatives.split("|")]
    for sub in re.findall(rf"^(?:usage: |\s+)cohort {command} ([a-z][a-z-]*)\b", top, re.M):
        texts.append(help_text(command, sub))
    for text in list(texts):  # forms the help points at: "(see: data import images --help)"
        for nested in re.findall(rf"see: {command} ([a-z-]+) ([a-z-]+) --help", text):
            texts.append(help_text(command, *nested))
    options = set()
    for text in texts:
        options |= set(re.findall(r"^\s+(?:-[a-zA-Z] \[ )?(--[a-z0-9][a-z0-9-]*)", text, re.M))
    missing = sorted(o for o in options if not re.search(re.escape(o) + r"\b", page))
    checked += len(options)
    if missing or f"cohort-{command} " not in page:
        print(f"FAIL: cohort-{command}(1) lacks {missing or 'its NAME line'}")
        failures += 1
print(f"{'FAIL' if failures else 'OK'}: {len(commands)} pages, {checked} options checked")
sys.exit(1 if failures else 0)
