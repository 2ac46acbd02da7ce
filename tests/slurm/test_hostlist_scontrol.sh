#!/usr/bin/env bash
# Cohort's hostlist expansion and compression against Slurm's own `scontrol show hostnames/hostlist`.
source "$(dirname "$0")/lib.sh"
lists=(
  'linux[1,2]' 'a,b[001,003],c' 'gpu-node-[01-04]' 'n[008-011]' 'a[1-2],b[7,9-10]'
  'rack[1-2]-n[1-3]' 'n[01-3]' 'x[0-2,5,7-8]' 'c-1-[1-2],c-2-[9-11]' 'n[1-3],n[2-4]'
  'node' 'a[98-102]' 'n[0001-0003]' 'login-[1-2]'
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
