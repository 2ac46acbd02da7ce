#!/usr/bin/env bash
# `cohort submit` (issue 7, test e): the rendered script (--dry-run) carries the #SBATCH values
# asked for and the config and overrides as single-quoted words, read back exactly by bash even
# when a value holds spaces, quotes, `;` and `$(...)`; bad values fail with one line (exit 2)
# before anything is submitted; and a real submit runs the training to its end on the cluster,
# in a run directory with that hostile name, with nothing executed from it.
source "$(dirname "$0")/lib.sh"
export PATH=$(dirname "$COHORT_BIN"):$PATH
cd "$work"
train_set
odd="$work/odd dir 'q' \$(touch $work/pwned); echo x"
printf '[data]\npath = %s\n[model]\nhidden = 64\n[train]\nepochs = 2\nlog_every = 50\n' \
  "$work/set.h5" >run.ini
cohort submit --config run.ini --set "train.run_dir=$odd" --nodes 2 --tasks-per-node 1 \
  --time 00:05:00 --job-name sub --dry-run >script.sbatch || fail "dry run failed"
for line in '#SBATCH --nodes=2' '#SBATCH --ntasks-per-node=1' '#SBATCH --time=00:05:00' \
  '#SBATCH --job-name=sub' '#SBATCH --requeue'; do
  grep -qxF -- "$line" script.sbatch || fail "no '$line' in the rendered script"
done
bash -n script.sbatch || fail "the rendered script does not parse"
# The GPU script renders too (it cannot run here: the test cluster has no GPUs).
cohort submit --config run.ini --template "$COHORT_SOURCE_DIR/sbatch/train-gpu.sbatch" --nodes 4 \
  --tasks-per-node 8 --gpus-per-node 8 --dry-run >gpu.sbatch || fail "GPU dry run failed"
for line in '#SBATCH --nodes=4' '#SBATCH --ntasks-per-node=8' '#SBATCH --gpus-per-node=8' \
  '#SBATCH --requeue' '#SBATCH --open-mode=append' 'export SLURM_STDOUTMODE=%x-%j-%t.log SLURM_OPEN_MODE=append'; do
  grep -qxF -- "$line" gpu.sbatch || fail "no '$line' in the rendered GPU script"
done
bash -n gpu.sbatch || fail "the rendered GPU script does not parse"
# Hot spares: the job asks for the step's nodes plus slurm.spare_nodes, and keeps --no-kill.
cohort submit --config run.ini --set slurm.spare_nodes=1 --nodes 2 --dry-run >spare.sbatch ||
  fail "dry run with a spare failed"
for line in '#SBATCH --nodes=3' '#SBATCH --no-kill'; do
  grep -qxF -- "$line" spare.sbatch || fail "no '$line' in the script with a spare"
done
grep -q -- "slurm.spare_nodes=1" spare.sbatch || fail "the spare setting is not passed on"
args_line=$(grep '^set -- ' script.sbatch)
mapfile -t words < <(bash -c "$args_line
printf '%s\n' \"\$@\"")
[ "${words[0]}" = "$work/run.ini" ] && [ "${words[1]}" = --set ] &&
  [ "${words[2]}" = "train.run_dir=$odd" ] || fail "arguments read back as: ${words[*]}"
[ ! -e "$work/pwned" ] || fail "a value was executed"
echo "dry run: #SBATCH values and exactly quoted arguments"

expect_usage() {  # expect_usage PATTERN ARGS...: exit 2, one line matching PATTERN
  local pattern=$1 rc=0
  shift
  cohort submit --config run.ini "$@" --dry-run >/dev/null 2>err.txt || rc=$?
  [ "$rc" = 2 ] && [ "$(wc -l <err.txt)" = 1 ] && grep -q -- "$pattern" err.txt ||
    fail "submit $* (exit $rc): $(cat err.txt)"
}
expect_usage "--time '1; true' is not valid" --time '1; true'
expect_usage "--job-name 'a b' is not valid" --job-name 'a b'
expect_usage "unknown key" --set train.epoch=3
echo "bad values: one line, exit 2"

out=$(cohort submit --config run.ini --set "train.run_dir=$odd" --nodes 2 --tasks-per-node 1 \
  --time 5 --job-name sub) || fail "submit failed: $out"
job=$(echo "$out" | sed -n 's/^submitted job \([0-9]*\) (script .*)$/\1/p')
[ -n "$job" ] || fail "no job id in: $out"
state=$(wait_end "$job")
cat "$work/sub-$job.out"
[ "$state" = COMPLETED ] || fail "job $job ended $state"
[ -f "$odd/metrics.jsonl" ] && [ -f "$odd/sub.sbatch" ] || fail "no run in the odd directory"
grep -q '^train: 2 rank(s) (slurm step)' "$work/sub-$job.out" || fail "not 2 ranks under srun"
[ ! -e "$work/pwned" ] || fail "a value was executed"
echo "submitted job $job ran to its end in '$odd'"
