# Sourced by the slurm tests. Needs COHORT_SLURM_DIR (the fixture's cluster) and COHORT_BIN.
set -euo pipefail
if [ -f "$COHORT_SLURM_DIR/unavailable" ]; then
  echo "SKIP: $(cat "$COHORT_SLURM_DIR/unavailable")"
  exit 77
fi
export SLURM_CONF=$COHORT_SLURM_DIR/slurm.conf
[ -f "$SLURM_CONF" ] || { echo "no Slurm cluster in $COHORT_SLURM_DIR (fixture not started?)" >&2; exit 1; }
work=$(mktemp -d "$COHORT_SLURM_DIR/test.XXXXXX")
fail() { echo "FAIL: $*" >&2; exit 1; }
