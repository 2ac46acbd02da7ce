# Sourced by examples/*/run.sh with the script's arguments: the first, if a number, is the rank
# count (default 2); the rest go to `cohort train`. COHORT names the binary (default: cohort on
# PATH). Data goes to ./data, runs to ./runs, in the current directory.
cohort=${COHORT:-cohort}
ranks=2
if [[ "${1:-}" =~ ^[0-9]+$ ]]; then ranks=$1; shift; fi
train_args=("$@")
mkdir -p data

# launch_train INI: starts the ranks (srun inside an allocation, mpirun elsewhere) and trains.
launch_train() {
  exec "$cohort" launch -n "$ranks" -- "$cohort" train --config "$1" "${train_args[@]}"
}
