#!/usr/bin/env python3
"""Bash completion of `cohort`, driven through bash's own machinery: an interactive bash on a
pseudo-terminal registers the completer the way the package does (the modulefiles' `complete`, or
share/bash-completion's loader, given as argv[1]: a file to source), then lines are typed with a
TAB and run; `cohort` there is a shell function that prints its arguments, so the output shows
what completion made of the line.
    completion.py LOADER"""
import os, pty, select, sys, time

loader = sys.argv[1]
PROMPT = "READY> "

pid, fd = pty.fork()
if pid == 0:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "TERM": "dumb", "INPUTRC": "/dev/null",
           "HOME": os.environ.get("HOME", "/tmp"), "PS1": PROMPT}
    os.execve("/bin/bash", ["bash", "--norc", "--noprofile", "-i"], env)

def read_until(marker, timeout=20.0):
    data, end = b"", time.time() + timeout
    while marker.encode() not in data:
        left = end - time.time()
        if left <= 0:
            sys.exit(f"FAIL: timed out waiting for {marker!r}; got {data.decode(errors='replace')!r}")
        if select.select([fd], [], [], left)[0]:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            data += chunk
    return data.decode(errors="replace")

def run(text):
    os.write(fd, text.encode())
    return read_until(PROMPT)

read_until(PROMPT)  # the first prompt (PS1 from the environment; typed lines never hold it)
run("bind 'set bell-style none'\n")
run(f"source {loader}; cohort() {{ printf '<%s>' \"$@\"; echo; }}\n")
registered = run("complete -p cohort\n")
if "-C " not in registered:
    sys.exit(f"FAIL: the loader registered no completer: {registered!r}")

failures = 0
cases = [  # typed before the TAB, what the function then prints
    ("cohort da", "<data>"),
    ("cohort data ins", "<data><inspect>"),
    ("cohort ckpt export --ou", "<ckpt><export><--out>"),
    ("cohort data import images --cr", "<data><import><images><--crop>"),
    ("cohort train --conf", "<train><--config>"),
    ("cohort train --set model.na", "<train><--set><model.name=>"),
    ("cohort train --set model.name=g", "<train><--set><model.name=gpt>"),
    ("cohort train --set checkpoint.verify=f", "<train><--set><checkpoint.verify=false>"),
    # the key ends without a space, so its value completes in the same word
    ("cohort train --set model.na\tc", "<train><--set><model.name=cnn>"),
    ("cohort --vers", "<--version>"),
]
for typed, want in cases:
    out = run(typed + "\t\n")
    got = [line.strip() for line in out.splitlines() if line.strip().startswith("<")]
    if want not in got:
        print(f"FAIL: {typed!r} + TAB -> {got or out!r}, expected {want}")
        failures += 1
    else:
        print(f"ok: {typed!r} + TAB -> {want}")
os.write(fd, b"exit\n")
sys.exit(1 if failures else 0)
