#!/usr/bin/env python3
"""Every command of `cohort help` has its page, cohort-COMMAND.1, and every option that the command
and each of its subcommands list in --help appears in that page. The options are read here from
--help with a parser of this test's own, not scripts/cli-docs's. Each page also has a
DESCRIPTION (a paragraph at least) and EXAMPLES, and every option an example gives a cohort
command is one that command's --help lists (an example cannot go stale silently).
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
pages, options_of = {}, {}
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
    pages[command], options_of[command] = page, options | {"--help"}
    missing = sorted(o for o in options if not re.search(re.escape(o) + r"\b", page))
    checked += len(options)
    if missing or f"cohort-{command} " not in page:
        print(f"FAIL: cohort-{command}(1) lacks {missing or 'its NAME line'}")
        failures += 1
examples = 0
for command, page in pages.items():
    description = re.search(r"^\.SH DESCRIPTION\n(.*?)^\.SH ", page, re.M | re.S)
    listed = re.search(r"^\.SH EXAMPLES\n\.nf\n(.*?)^\.fi", page, re.M | re.S)
    if not description or len(description.group(1)) < 100 or not listed:
        print(f"FAIL: cohort-{command}(1) lacks a DESCRIPTION or EXAMPLES")
        failures += 1
        continue
    lines = [l for l in listed.group(1).splitlines() if l and not l.startswith("#")]
    if not any(f"cohort {command}" in l for l in lines):
        print(f"FAIL: cohort-{command}(1): no example runs cohort {command}")
        failures += 1
    for line in lines:
        examples += 1
        for part in re.findall(r"cohort ([a-z]+)((?:(?! -- ).)*)", line):
            used, text = part[0], part[1]
            unknown = [o for o in re.findall(r"(?<![\w-])(--[a-z0-9][a-z0-9-]*)", text)
                       if used in options_of and o not in options_of[used]]
            if used not in options_of or unknown:
                print(f"FAIL: cohort-{command}(1) example '{line}': cohort {used} "
                      f"{'does not exist' if used not in options_of else 'has no ' + str(unknown)}")
                failures += 1
print(f"{'FAIL' if failures else 'OK'}: {len(commands)} pages, {checked} options checked, "
      f"{examples} examples")
sys.exit(1 if failures else 0)
