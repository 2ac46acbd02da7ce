# Sourced by the slurm tests. Needs COHORT_SLURM_DIR (the fixture's cluster) and COHORT_BIN.
set -euo pipefail
if [ -f "$COHORT_SLURM_DIR/unavailable" ]; then
  echo "SKIP: $(cat "$COHORT_SLURM_DIR/unavailable")"
  exit 79
fi
export SLURM_CONF=$COHORT_SLURM_DIR/slurm.conf
[ -f "$SLURM_CONF" ] || { echo "no Slurm cluster in $COHORT_SLURM_DIR (fixture not started?)" >&2; exit 1; }
work=$(mktemp -d "$COHORT_SLURM_DIR/test.XXXXXX")
fail() { echo "FAIL: $*" >&2; exit 1; }

# submit_wait ARGS...: sbatch ARGS, poll the job every 0.2 s (sbatch --wait polls with backoff up to
# 30 s), and succeed when it COMPLETED with exit code 0. Prints the job id.
submit_wait() {
  local id state i
  id=$(sbatch --parsable "$@") || fail "sbatch $* failed"
  for i in $(seq 1 600); do
    state=$(scontrol show job "$id" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2)
    case "$state" in
      PENDING|RUNNING|CONFIGURING|COMPLETING|"") sleep 0.2 ;;
      COMPLETED) echo "$id"; return 0 ;;
      *) echo "$id"; echo "job $id ended $state" >&2; return 1 ;;
    esac
  done
  fail "job $id did not end within 120 s"
}
