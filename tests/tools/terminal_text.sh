#!/usr/bin/env bash
# The one way to the terminal holds for every source (docs/testing-hostile-input.md): both
# executables install io::install_printable_output() before anything runs, which filters C's
# stdout and stderr and iostreams alike; no source goes around it by writing to descriptors 1 or
# 2 itself, by redirecting them, or by asking stdout for a descriptor (fileno() of a filtered
# stream is -1: io::terminal_fd), except the files listed here, each for its reason.
# usage: terminal_text.sh SOURCE_DIR
set -euo pipefail
src=$1
fail() { echo "FAIL: $*"; exit 1; }
declare -A allowed=(
  [src/io/terminal.cpp]="the filter itself"
  [src/cli/launch_output.cpp]="relays mpirun's stderr, each line through an io::PrintableFilter"
  [src/ops/step_runner.cpp]="the forked child's stderr, redirected before exec"
  [src/slurm/submit.cpp]="the forked child's stdout to a pipe (sbatch's reply), before exec"
)
pattern='write\((STDOUT_FILENO|STDERR_FILENO|1|2),|fileno\(|freopen\(|dup2\([^,]+, *(STDOUT_FILENO|STDERR_FILENO|1|2)\)|(^|[^a-z_])(stdout|stderr) *= '
cd "$src"
hits=$(grep -rnE "$pattern" src --include='*.cpp' --include='*.hpp' | grep -vE '^[^:]+:[0-9]+:[[:space:]]*//' || true)
seen=()
while IFS= read -r hit; do
  [ -n "$hit" ] || continue
  file=${hit%%:*}
  [ -n "${allowed[$file]:-}" ] ||
    fail "$hit: goes around the printable output (io/terminal.hpp): print through stdio or iostreams"
  seen+=("$file")
done <<<"$hits"
# The search must be able to find what it looks for: every listed file holds such a use.
for file in "${!allowed[@]}"; do
  printf '%s\n' "${seen[@]}" | grep -qxF "$file" ||
    fail "$file: listed, but the search finds nothing there (remove it, or the search is broken)"
done
for main in src/cli/dispatch.cpp; do
  grep -q 'io::install_printable_output()' "$main" ||
    fail "$main: exit_status_of no longer installs the printable output"
done
echo "no source goes around the printable output (${#allowed[@]} listed files, each for its reason)"
