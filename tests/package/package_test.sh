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
done
