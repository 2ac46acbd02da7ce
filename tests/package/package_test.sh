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
# The installed CLI runs from the prefix: cohort itself, and cohort-torch (RPATH to its library)
# for the commands it hands over; neither searches the working directory for libraries.
"$work/prefix/bin/cohort" --version
"$work/prefix/bin/cohort" env --json | grep -q '"torch"' || { echo "installed cohort env failed" >&2; exit 1; }
for exe in cohort cohort-torch; do
  runpath=$(readelf -d "$work/prefix/bin/$exe" | sed -n 's/.*R\(UN\)\?PATH.*\[\(.*\)\]/\2/p')
  case "$runpath" in :*|*:|*::*) echo "$exe: an empty RUNPATH entry (the working directory): $runpath" >&2; exit 1 ;; esac
done
# A man page per command, installed beside cohort(1).
for page in cohort cohort-train cohort-ckpt cohort-data cohort-env; do
  [ -f "$work/prefix/share/man/man1/$page.1" ] || { echo "no man page $page(1)" >&2; exit 1; }
done
# Bash completion through bash's own machinery, registered by share/bash-completion's file.
/usr/bin/python3 "$source/tests/cli/completion.py" "$work/prefix/share/bash-completion/completions/cohort" \
  >"$work/completion.log" || { cat "$work/completion.log" >&2; exit 1; }
echo "bash completion (bash-completion file): $(grep -c '^ok' "$work/completion.log") lines completed"
# Both modulefiles, loaded by Debian's Lmod (the Lua one from the installed tree; the Tcl one
# from a tree of its own, which Lmod reads through its Tcl bridge), put that CLI on PATH and the
# prefix on CMAKE_PREFIX_PATH and MANPATH.
version=$(cat "$source/VERSION")
modules=$work/prefix/share/modulefiles
[ -f "$modules/cohort/$version.lua" ] || { echo "no Lmod file" >&2; exit 1; }
[ -f "$modules/cohort/$version" ] || { echo "no Tcl modulefile" >&2; exit 1; }
mkdir -p "$work/tcl/cohort"
cp "$modules/cohort/$version" "$work/tcl/cohort/$version"
lmod_init=/usr/share/lmod/lmod/init/bash
[ -f "$lmod_init" ] || { echo "Lmod is not installed (Debian package lmod)" >&2; exit 1; }
for tree in "$modules" "$work/tcl"; do
  (
    set +u  # Lmod's shell functions read unset variables
    # shellcheck disable=SC1090
    source "$lmod_init"
    module use "$tree"
    module load cohort
    [ "$(command -v cohort)" = "$work/prefix/bin/cohort" ] ||
      { echo "module load ($tree) did not put cohort on PATH" >&2; exit 1; }
    case ":$CMAKE_PREFIX_PATH:" in *":$work/prefix:"*) ;; *) echo "no CMAKE_PREFIX_PATH" >&2; exit 1 ;; esac
    case ":$MANPATH:" in *":$work/prefix/share/man:"*) ;; *) echo "no MANPATH" >&2; exit 1 ;; esac
    [ "$(cohort --version)" = "cohort $version" ] || { echo "cohort --version failed" >&2; exit 1; }
    echo "module load cohort ($(module -t list 2>&1 | tr '\n' ' ')from $tree): $(cohort --version)"
  ) || exit 1
  # The modulefile registers the completer: an interactive bash that loads it completes.
  printf 'set +u; source %q; module use %q; module load cohort\n' "$lmod_init" "$tree" >"$work/load.sh"
  /usr/bin/python3 "$source/tests/cli/completion.py" "$work/load.sh" >"$work/completion.log" ||
    { cat "$work/completion.log" >&2; exit 1; }
  echo "bash completion (module load, $tree): $(grep -c '^ok' "$work/completion.log") lines completed"
done

# The build tree's own modulefile (no install): this build's cohort, its man pages, its completer.
(
  set +u
  # shellcheck disable=SC1090
  source "$lmod_init"
  module use "$build/modulefiles"
  module load cohort
  [ "$(command -v cohort)" = "$build/cohort" ] ||
    { echo "module load (build tree) put $(command -v cohort) on PATH, not $build/cohort" >&2; exit 1; }
  case ":$MANPATH:" in *":$build/cli-docs/man:"*) ;; *) echo "build tree: no MANPATH" >&2; exit 1 ;; esac
  [ -f "$build/cli-docs/man/man1/cohort-train.1" ] || { echo "no cohort-train(1) in the build tree" >&2; exit 1; }
  [ -f "$build/cli-docs/man/man1/cohort.1" ] || { echo "no cohort(1) in the build tree" >&2; exit 1; }
  echo "module load cohort (build tree): $(command -v cohort), man pages in $build/cli-docs/man"
) || exit 1
printf 'set +u; source %q; module use %q; module load cohort\n' "$lmod_init" "$build/modulefiles" >"$work/load.sh"
/usr/bin/python3 "$source/tests/cli/completion.py" "$work/load.sh" >"$work/completion.log" ||
  { cat "$work/completion.log" >&2; exit 1; }
echo "bash completion (module load, build tree): $(grep -c '^ok' "$work/completion.log") lines completed"
