#!/usr/bin/env bash
# `cohort bench topology --json` for 10,000 nodes x 4 tasks: the last task is detected as rank
# 39999 on node 9999 of 10,000, and the figures are there (not timed here: docs/scaling.md has
# them). A small step prints text.
set -euo pipefail
cohort=$1
"$cohort" bench topology --json --repeats 3 | /usr/bin/python3 -c '
import json, sys
r = json.load(sys.stdin)
assert (r["ranks"], r["rank"], r["node_index"], r["hosts"]) == (40000, 39999, 9999, 10000), r
assert all(r[k] > 0 for k in ("detect_ms", "expand_ms", "compress_ms")), r
print("10000 nodes x 4: detect %.2f ms, expand %.2f ms" % (r["detect_ms"], r["expand_ms"]))'
"$cohort" bench topology --nodes 3 --tasks 2 | grep -q "rank 5 on node 2 of 3"
