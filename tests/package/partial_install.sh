#!/usr/bin/env bash
# `cmake --install` of a build that lacks what is installed (configured only: nothing built, as
# after a partial build) stops before copying anything, in a message naming the missing files
# and the command that builds them.
set -euo pipefail
source_dir=$1 work=$2
rm -rf "$work" && mkdir -p "$work"
cmake -S "$source_dir" -B "$work/build" -DCMAKE_BUILD_TYPE=Release >"$work/configure.log" 2>&1 ||
  { echo "FAIL: configure: $(tail -5 "$work/configure.log")"; exit 1; }
rc=0
cmake --install "$work/build" --prefix "$work/prefix" >"$work/install.log" 2>&1 || rc=$?
out=$(tr -s ' \n' ' ' <"$work/install.log")
[ "$rc" != 0 ] || { echo "FAIL: install of an unbuilt tree succeeded"; exit 1; }
[[ $out == *"install needs the whole build, missing:"*"cohort-exporter"*"cmake --build"* ]] ||
  { echo "FAIL: the message does not name what is missing and how to build it: $out"; exit 1; }
[ -z "$(find "$work/prefix" -type f 2>/dev/null)" ] ||
  { echo "FAIL: files were installed before the refusal: $(find "$work/prefix" -type f | head)"; exit 1; }
echo "OK: an unbuilt tree's install refused before copying: $out"
