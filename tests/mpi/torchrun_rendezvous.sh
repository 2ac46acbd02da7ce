#!/usr/bin/env bash
# Processes started apart with torchrun-style variables (RANK, WORLD_SIZE, MASTER_ADDR,
# MASTER_PORT: what torchrun and a Kubernetes Indexed Job give) become one MPI world through the
# rendezvous (rank 0 runs ompi-server and admits the others over MASTER_PORT). Two modes, two
# tests (tests/mpi/CMakeLists.txt):
#   world    (mpi.torchrun_rendezvous) Open MPI 4:
#  - three processes started in reverse rank order see one world of 3 in RANK order (cohort env);
#  - two Indexed-Job-style processes likewise form one world of 2;
#  - two processes train to the same final parameters, bit for bit, as `mpirun -np 2`.
#            Open MPI 5 has no ompi-server, so no world can form: it skips (exit 79).
#   refusal  (mpi.torchrun_rendezvous.refusal) a torchrun-style start that cannot form a world ends
#            in one line, never a hang. Open MPI 4: a rank that never comes ends rank 0 with one
#            line, and no ompi-server is left. Open MPI 5: the start is refused at once, in one
#            line naming ompi-server, exit 2.
set -euo pipefail
cohort=$1 work=$2 mode=${3:-world}
case $mode in world|refusal) ;; *) echo "torchrun_rendezvous.sh: mode '$mode' is not world or refusal" >&2; exit 2 ;; esac
rm -rf "$work" && mkdir -p "$work" && cd "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1  # ompi-server, as root in CI
# Open MPI's major release: "mpirun (Open MPI) 4.1.4" (sed reads it all: no SIGPIPE under pipefail).
ompi_major=$(mpirun --version | sed -n '1s/^[^0-9]*\([0-9][0-9]*\).*/\1/p')
[ -n "$ompi_major" ] || fail "no Open MPI release in 'mpirun --version': $(mpirun --version | head -1)"
# A free port (the kernel picks one, and it is released before use).
port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# start N NAME ARGS...: N processes of `cohort ARGS`, highest rank first; waits for all.
start() {
  local n=$1 name=$2 p r pids=()
  shift 2
  p=$(port)
  for ((r = n - 1; r >= 0; r--)); do
    RANK=$r WORLD_SIZE=$n LOCAL_RANK=$r LOCAL_WORLD_SIZE=$n MASTER_ADDR=127.0.0.1 MASTER_PORT=$p \
      COHORT_RENDEZVOUS_TIMEOUT_S=60 timeout 120 "$cohort" "$@" >"$name.$r.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || { tail -n 20 "$name".*.log >&2; fail "$name: a rank failed"; }; done
}

if [ "$mode" = refusal ]; then
  if [ "$ompi_major" -ge 5 ]; then
    # Open MPI 5 has no ompi-server: the rendezvous is refused at once, in one line, before MPI
    # starts.
    set +e
    RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$(port) timeout 20 "$cohort" env >refused.log 2>&1
    rc=$?
    set -e
    cat refused.log
    [ "$rc" = 2 ] || fail "Open MPI 5: a torchrun-style start exited $rc, expected 2 (environment error)"
    [ "$(wc -l <refused.log)" = 1 ] && grep -q "no longer has" refused.log ||
      fail "Open MPI 5: the refusal is not one line naming ompi-server"
    echo "Open MPI 5: torchrun-style start refused in one line (exit 2)"
    exit 0
  fi
  # Open MPI 4: rank 0 waits for a rank that never comes, for COHORT_RENDEZVOUS_TIMEOUT_S only.
  # Its own pid names its ompi-server's URI file (cohort-ompi-server-PID.uri, on the server's
  # command line): a test running beside this one may have a server of its own.
  RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$(port) COHORT_RENDEZVOUS_TIMEOUT_S=3 \
    "$cohort" env >/dev/null 2>alone.err &
  pid=$!
  # The control: while rank 0 waits, its server is seen by the very pattern that must not find it
  # afterwards (else a renamed URI file would make that check pass blindly).
  seen=0
  for _ in $(seq 1 600); do
    kill -0 "$pid" 2>/dev/null || break
    pgrep -f "cohort-ompi-server-$pid\.uri" >/dev/null && seen=1
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid"
    fail "rank 0 alone still waits after 60 s (COHORT_RENDEZVOUS_TIMEOUT_S=3)"
  fi
  wait "$pid" && fail "rank 0 alone succeeded"
  err=$(cat alone.err)
  echo "$err" | grep -q "^cohort: error: rendezvous: only 1 of 2 ranks arrived within" ||
    fail "rank 0 alone: '$err'"
  [ "$(grep -c '^cohort: error' alone.err)" = 1 ] || fail "rank 0 alone: not one error line: '$err'"
  echo "alone: $(grep '^cohort: error' alone.err)"
  [ "$seen" = 1 ] || fail "no ompi-server with cohort-ompi-server-$pid.uri was seen while rank 0 waited"
  sleep 0.5
  ! pgrep -f "cohort-ompi-server-$pid\.uri" >/dev/null || fail "an ompi-server was left running"
  echo "no ompi-server left"
  exit 0
fi

if [ "$ompi_major" -ge 5 ]; then
  echo "SKIP: Open MPI $ompi_major has no ompi-server, so processes started apart cannot form one" \
    "world (docs/launcher.md); mpi.torchrun_rendezvous.refusal checks that such a start is refused"
  exit 79
fi

start 3 env env --all-ranks --json
/usr/bin/python3 - env.0.log <<'PY'
import json, sys
views = json.load(open(sys.argv[1]))
views = views["ranks"] if isinstance(views, dict) else views
assert [v["rank"] for v in views] == [0, 1, 2], views
assert all(v["world_size"] == 3 and v["launcher"] == "torchrun" for v in views), views
print("env: one world of 3, ranks in RANK order, launcher torchrun")
PY

# A Kubernetes Indexed Job's pods: JOB_COMPLETION_INDEX and WORLD_SIZE, no RANK (examples/k8s).
p=$(port) pods=()
for i in 1 0; do
  JOB_COMPLETION_INDEX=$i WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$p \
    COHORT_RENDEZVOUS_TIMEOUT_S=60 timeout 120 "$cohort" env >"pod.$i.log" 2>&1 &
  pods+=($!)
done
for pid in "${pods[@]}"; do wait "$pid" || fail "indexed job: $(cat pod.*.log)"; done
grep -q "rank 0 of 2 (indexed job)" pod.0.log && grep -q "rank 1 of 2 (indexed job)" pod.1.log &&
  grep -q "launcher nodes per host 2" pod.0.log ||
  { cat pod.0.log >&2; fail "the Indexed Job pods did not form one world of 2"; }
echo "indexed job: 2 pods, one world"

"$cohort" data make-synthetic --kind classification --samples 2048 --features 64 --classes 4 \
  --seed 2 --out set.h5 >/dev/null
settings=(--set data.path=set.h5 --set data.batch_size=16 --set model.hidden=64 --set train.epochs=2
  --set train.seed=5 --set train.log_every=0 --set checkpoint.every_steps=1000)
$MPIEXEC $MPIEXEC_FLAGS -np 2 "$cohort" train "${settings[@]}" --set train.run_dir=ref >ref.log 2>&1 ||
  fail "mpirun reference: $(tail -n 5 ref.log)"
start 2 train train "${settings[@]}" --set train.run_dir=apart
grep -q "^done: 128 steps, 2 epoch(s), 2 rank(s)" train.0.log || fail "rank 0 did not train in a world of 2"
/usr/bin/python3 - <<'PY'
import json
def sums(run):
    latest = open(f"{run}/checkpoints/latest").read().strip()
    m = json.load(open(f"{run}/checkpoints/{latest}/manifest.json"))
    return m["step"], {t["name"]: [s["checksum"] for s in t["slices"]] for t in m["tensors"]}
ref, apart = sums("ref"), sums("apart")
assert ref[0] == apart[0] == 128, (ref[0], apart[0])
assert ref == apart, "the rendezvous run differs from mpirun's"
print("train: 2 processes started apart end bit-identical to mpirun -np 2 (128 steps)")
PY

