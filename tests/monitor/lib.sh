# Shared by the monitor tests: `source lib.sh COHORT WORK` makes WORK afresh and enters it, writes
# set.h5 (4096 synthetic samples of 256 features, 10 classes), and defines fail and
#   train RUN_DIR [--set ...]   2 ranks, batch 32, 2 epochs (128 steps), extra settings last.
set -euo pipefail
cohort=$1 work=$2
rm -rf "$work" && mkdir -p "$work" && cd "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
"$cohort" data make-synthetic --kind classification --samples 4096 --features 256 --classes 10 \
  --seed 4 --out set.h5 >/dev/null
train() {
  local dir=$1
  shift
  $MPIEXEC $MPIEXEC_FLAGS -np 2 "$cohort" train --set data.path=set.h5 --set data.batch_size=32 \
    --set train.epochs=2 --set train.run_dir="$dir" "$@"
}
