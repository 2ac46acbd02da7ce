#!/usr/bin/env bash
# Installs the build into a fresh prefix, then configures, builds and runs tests/package/consumer
# against it with find_package(Cohort).
set -euo pipefail
build=$1; source=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S "$source/tests/package/consumer" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/consumer" >/dev/null
out=$("$work/consumer/consumer")
echo "$out"
[ "$out" = "cohort $(cat "$source/VERSION") torchrun 1/2 2" ] || { echo "unexpected output" >&2; exit 1; }
# The installed CLI runs from the prefix (RPATH to its library).
"$work/prefix/bin/cohort" --version
# The Tcl modulefile, loaded by Debian's Environment Modules, puts that CLI on PATH.
[ -f "$work/prefix/share/modulefiles/cohort/$(cat "$source/VERSION").lua" ] || { echo "no Lmod file" >&2; exit 1; }
# shellcheck disable=SC1091
source /usr/share/modules/init/bash
module use "$work/prefix/share/modulefiles"
module load cohort
[ "$(command -v cohort)" = "$work/prefix/bin/cohort" ] || { echo "module load did not put cohort on PATH" >&2; exit 1; }
cohort --version
