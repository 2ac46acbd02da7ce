#!/usr/bin/env bash
# Cohort's hostlist expansion and compression against a table computed by hand from Slurm's rules
# (below), then against Slurm's own `scontrol show hostnames/hostlist`. Cohort calls libslurm, the
# code scontrol runs, so agreeing with scontrol alone proves only that the calls are made; the
# table is the independent reference. It needs no cluster and is checked first; with the argument
# `table` the script stops after it.
set -euo pipefail
fail() { echo "FAIL: $*" >&2; exit 1; }
# LIST | its hosts, in Slurm's order | those hosts compressed back, in that order. The rules:
# a bracket's low bound sets the zero padding of the whole range (n[01-3]); a range does not
# compress with a neighbour of another padding (n3 then n01); ranges and hosts keep their order,
# duplicates included (no sorting); of two bracket groups the last varies fastest; compression
# takes the digits at the end of a name as its number, the rest (digits and dashes too) as its
# prefix (a1-b2[3-4] comes back as a1-b[23-24]), and brackets consecutive runs of one prefix.
table='
node                  | node                                                   | node
n7                    | n7                                                     | n7
n[08-11]              | n08 n09 n10 n11                                        | n[08-11]
n[8-11]               | n8 n9 n10 n11                                          | n[8-11]
n[098-101]            | n098 n099 n100 n101                                    | n[098-101]
n[01-3]               | n01 n02 n03                                            | n[01-03]
n[1-3,7]              | n1 n2 n3 n7                                            | n[1-3,7]
x[0-2,5,7-8]          | x0 x1 x2 x5 x7 x8                                      | x[0-2,5,7-8]
n[3,1-2]              | n3 n1 n2                                               | n[3,1-2]
n[1-3],n[2-4]         | n1 n2 n3 n2 n3 n4                                      | n[1-3,2-4]
n1,n2,n3              | n1 n2 n3                                               | n[1-3]
n[1-3],n[01-03]       | n1 n2 n3 n01 n02 n03                                   | n[1-3,01-03]
n[1-2],m1,n3          | n1 n2 m1 n3                                            | n[1-2],m1,n3
rack[1-2]-n[1-3]      | rack1-n1 rack1-n2 rack1-n3 rack2-n1 rack2-n2 rack2-n3  | rack1-n[1-3],rack2-n[1-3]
cab[1-2]-n[09-10]     | cab1-n09 cab1-n10 cab2-n09 cab2-n10                    | cab1-n[09-10],cab2-n[09-10]
gpu-node-[01-04]      | gpu-node-01 gpu-node-02 gpu-node-03 gpu-node-04        | gpu-node-[01-04]
gpu01-[1-2]           | gpu01-1 gpu01-2                                        | gpu01-[1-2]
c-1-[1-2],c-2-[9-11]  | c-1-1 c-1-2 c-2-9 c-2-10 c-2-11                        | c-1-[1-2],c-2-[9-11]
a1-b2[3-4]            | a1-b23 a1-b24                                          | a1-b[23-24]
x,y[1-2],z            | x y1 y2 z                                              | x,y[1-2],z
a,b[001,003],c        | a b001 b003 c                                          | a,b[001,003],c
a[1-2],b[7,9-10]      | a1 a2 b7 b9 b10                                        | a[1-2],b[7,9-10]
a[98-102]             | a98 a99 a100 a101 a102                                 | a[98-102]
'
rows=0 table_lists=()
while IFS='|' read -r list hosts compressed; do
  read -r list <<<"$list"  # trims the padding (never `echo $x`: a bracket would be a glob)
  read -r hosts <<<"$hosts"
  read -r compressed <<<"$compressed"
  [ -n "$list$hosts$compressed" ] || continue
  [ -n "$list" ] && [ -n "$hosts" ] && [ -n "$compressed" ] ||
    fail "a row of the table lacks a column: '$list | $hosts | $compressed'"
  got=$("$HOSTLIST_TOOL" expand "$list" | tr '\n' ' ') || fail "cohort rejects '$list'"
  [ "${got% }" = "$hosts" ] || fail "expand '$list': the table says [$hosts] but cohort gives [${got% }]"
  got=$("$HOSTLIST_TOOL" compress $hosts) || fail "cohort cannot compress [$hosts]"
  [ "$got" = "$compressed" ] || fail "compress [$hosts]: the table says '$compressed' but cohort gives '$got'"
  got=$("$HOSTLIST_TOOL" expand "$compressed" | tr '\n' ' ')
  [ "${got% }" = "$hosts" ] || fail "expand '$compressed' (compressed '$list'): [${got% }], not [$hosts]"
  rows=$((rows + 1)) table_lists+=("$list")
done <<<"$table"
[ "$rows" -gt 0 ] || fail "the hand-computed table is empty"
echo "$rows hostlists agree with the hand-computed table"
# `table`: the table alone (slurm.hostlist_table, label unit: no cluster needed, never skipped).
[ "${1:-}" != table ] || exit 0

source "$(dirname "$0")/lib.sh"
lists=(
  'linux[1,2]' 'a,b[001,003],c' 'gpu-node-[01-04]' 'n[008-011]' 'a[1-2],b[7,9-10]'
  'rack[1-2]-n[1-3]' 'n[01-3]' 'x[0-2,5,7-8]' 'c-1-[1-2],c-2-[9-11]' 'n[1-3],n[2-4]'
  'node' 'a[98-102]' 'n[0001-0003]' 'login-[1-2]' "${table_lists[@]}"
)
# Lists whose reading changed between Slurm releases: 22.05 rejects a suffix after a range
# ('login-[1-2]-a'), 23.11 and later expand it. Cohort expands through the libslurm it was built
# with, so it must agree with that release's scontrol either way.
for odd in 'login-[1-2]-a' 'n[3-1]'; do
  want=$(scontrol show hostnames "$odd" 2>/dev/null)
  if [ -z "$want" ]; then  # scontrol exits 0 on a bad list but prints no host
    if "$HOSTLIST_TOOL" expand "$odd" >/dev/null 2>&1; then fail "cohort accepts '$odd', which this Slurm rejects"; fi
  else
    got=$("$HOSTLIST_TOOL" expand "$odd") || fail "cohort rejects '$odd', which this Slurm expands"
    [ "$want" = "$got" ] || fail "expand '$odd': scontrol gives [$(echo $want)] but cohort gives [$(echo $got)]"
  fi
done
# A stray bracket is no host name: Cohort refuses it on every release (Slurm 24.11 reads
# 'n[1-2]]' as the hosts 'n1]' and 'n2]').
if "$HOSTLIST_TOOL" expand 'n[1-2]]' >/dev/null 2>&1; then fail "cohort accepts 'n[1-2]]'"; fi
for list in "${lists[@]}"; do
  want=$(scontrol show hostnames "$list")
  got=$("$HOSTLIST_TOOL" expand "$list")
  [ "$want" = "$got" ] || fail "expand '$list': scontrol gives [$(echo $want)] but cohort gives [$(echo $got)]"
  # Compression must give a list that scontrol expands back to the same hosts.
  compressed=$("$HOSTLIST_TOOL" compress $want)
  [ "$(scontrol show hostnames "$compressed")" = "$want" ] || fail "compress of '$list' gave '$compressed'"
  [ "$compressed" = "$(scontrol show hostlist "$(echo $want | tr ' ' ',')")" ] \
    || fail "compress '$list': cohort '$compressed' vs scontrol '$(scontrol show hostlist "$(echo $want | tr ' ' ',')")'"
done
echo "${#lists[@]} hostlists agree with scontrol"
