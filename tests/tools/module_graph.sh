#!/usr/bin/env bash
# The module graph, as the build enforces it: usage: module_graph.sh SOURCE_DIR VIEW_DIR CXX.
#  1. docs/architecture.md's module table lists, for every module, exactly the modules its
#     include view holds (src/CMakeLists.txt, cohort_module USES);
#  2. from each module's view, every header of a module it may use resolves into the view, and
#     no header of any other module resolves at all (public and private headers alike);
#  3. a real compile: an upward include (comm including a train header) fails for want of the
#     file, and an allowed one (comm including an env header) compiles;
#  4. settings needs no LibTorch: none of its files includes a LibTorch header (the light
#     `cohort` links every settings object, so its link proves the same of the symbols).
set -euo pipefail
src=$1 views=$2 cxx=$3
fail() { echo "FAIL: $*"; exit 1; }
modules="env io settings comm ddp pipeline data ckpt monitor slurm models ops train bench"
flags() { echo "-I$views/$1/public -I$views/$1/private"; }

for m in $modules; do
  [ -f "$views/$m/uses" ] || fail "no include view for module $m"
  built=$(tr ';' '\n' <"$views/$m/uses" | sed '/^$/d' | sort | xargs)
  row=$(grep -E "^\| \`$m\` \|" "$src/docs/architecture.md" || true)
  [ -n "$row" ] || fail "docs/architecture.md has no row for module $m"
  documented=$(echo "$row" | awk -F'|' '{print $3}' | tr -d '` ' | tr ',' '\n' |
    sed '/^—$/d;/^$/d' | sort | xargs)
  [ "$built" = "$documented" ] ||
    fail "module $m: the build lets it use '$built', docs/architecture.md says '$documented'"
done
echo "docs/architecture.md matches the build's views"

checked=0
for m in $modules; do
  allowed=" $m $(tr ';' ' ' <"$views/$m/uses") "
  for n in $modules; do
    [ "$n" = "$m" ] && continue
    for header in "$src"/include/cohort/"$n"/*.hpp "$src"/src/"$n"/*.hpp; do
      [ -e "$header" ] || continue
      case "$header" in
        "$src"/include/*) name=${header#"$src"/include/} ;;
        *) name=${header#"$src"/src/} ;;
      esac
      # -M -MG: where the include resolves, without needing what it includes in turn.
      # shellcheck disable=SC2046
      resolved=$(echo "#include \"$name\"" | $cxx -M -MG $(flags "$m") -x c++ - 2>/dev/null |
        tr ' \\' '\n\n' | grep -F "$name" | head -1 || true)
      if [[ "$allowed" == *" $n "* ]]; then
        [[ "$resolved" == "$views/$m/"* ]] || fail "$m may use $n, but $name does not resolve"
      else
        [[ "$resolved" == "$views/"* ]] && fail "$m must not use $n, but $name resolves: $resolved"
      fi
      checked=$((checked + 1))
    done
  done
done
echo "$checked (module, header) pairs resolve as the graph says"

err=$(mktemp)
trap 'rm -f "$err"' EXIT
# shellcheck disable=SC2046
if echo '#include "cohort/train/trainer.hpp"' |
  $cxx -fsyntax-only -std=c++17 $(flags comm) -x c++ - 2>"$err"; then
  fail "comm compiled an include of a train header"
fi
grep -q "No such file" "$err" || fail "the upward include failed for another reason: $(cat "$err")"
# shellcheck disable=SC2046
echo '#include "cohort/env/hostlist.hpp"' | $cxx -fsyntax-only -std=c++17 $(flags comm) -x c++ - ||
  fail "comm cannot compile an include of an env header"
torch_includes=$(grep -nE '^\s*#\s*include\s*[<"](torch/|ATen/|c10/|common/torch)' \
  "$src"/src/settings/* "$src"/include/cohort/settings/* || true)
[ -z "$torch_includes" ] || fail "settings must not need LibTorch: $torch_includes"
echo "settings includes no LibTorch header"
echo "module graph: ok"
