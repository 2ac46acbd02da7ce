#!/usr/bin/env bash
# check_env_views must be able to fail, and fail for the right reason: bad_views.jsonl holds two
# views that both say rank 0 (the second should be rank 1), and the checker must refuse it with its
# documented exit (1: a consistency problem; 2 is a usage error) and the one line naming that view,
# not with any failure at all (a missing file and a usage error exit non-zero too, and a WILL_FAIL
# test passed on those). The control: the same options accept good_views.jsonl, so the refusal
# comes from the duplicated rank, not from the options.
#   check_env_views_refuses.sh CHECK_ENV_VIEWS DIR   (DIR holds bad_views.jsonl, good_views.jsonl)
set -uo pipefail
tool=$1 dir=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
bad=$dir/bad_views.jsonl
[ -f "$bad" ] && [ -f "$dir/good_views.jsonl" ] || fail "the inputs are missing from $dir"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$tool" "$bad" --world 2 >"$tmp/out" 2>"$tmp/err"
code=$?
want="check_env_views: $bad: rank 0 appears twice"
[ "$code" = 1 ] || fail "bad_views.jsonl: exit $code, not 1 (a consistency problem): $(cat "$tmp/err")"
[ "$(cat "$tmp/err")" = "$want" ] || fail "bad_views.jsonl: the refusal is [$(cat "$tmp/err")], not [$want]"
[ ! -s "$tmp/out" ] || fail "bad_views.jsonl: refused, yet printed on stdout: $(cat "$tmp/out")"

out=$("$tool" "$dir/good_views.jsonl" --world 2 2>&1)
code=$?
[ "$code" = 0 ] || fail "good_views.jsonl: exit $code with the same options: $out"
[ "$out" = "check_env_views: 2 consistent views" ] || fail "good_views.jsonl: said [$out]"
echo "check_env_views refuses bad_views.jsonl: $want (exit 1); accepts good_views.jsonl"
