# Helpers that register tests with CTest: labels, and a TIMEOUT on every test as its hang watchdog.
# A test skips with exit code 79 (not automake's 77, which is cohort's "peer lost" code and would
# hide a real failure as a skip).

set(COHORT_TEST_TIMEOUT 120 CACHE STRING "Default per-test timeout (s): the hang watchdog")

# mpirun flags: oversubscribe always (2-core CI), and allow root only when running as root.
execute_process(COMMAND id -u OUTPUT_VARIABLE _cohort_uid OUTPUT_STRIP_TRAILING_WHITESPACE)
set(COHORT_MPIEXEC_FLAGS --oversubscribe)
if(_cohort_uid STREQUAL "0")
  list(APPEND COHORT_MPIEXEC_FLAGS --allow-run-as-root)
endif()
string(JOIN " " COHORT_MPIEXEC_FLAGS_TEXT ${COHORT_MPIEXEC_FLAGS})  # for scripts, via environment

# Area labels. Each test carries a scope label where it registers (unit: one process or a few local
# ranks; mpi: ranks through mpirun; slurm: the sandbox cluster) and the area labels this one table
# gives it from its name, so `ctest -L zero` selects every ZeRO test wherever it is registered and a
# new test is labelled without anyone remembering to. Pairs of label and regular expression over the
# test's name; docs/testing.md ("Labels") lists the same areas, and tools.labels fails when the two
# differ, when an area selects nothing, or when a test has no area.
set(COHORT_TEST_AREAS
  bench       "bench|^scale\\.control_paths"
  checkpoint  "ckpt|checkpoint|resume|byte_flip|materialize|restart_ledger|fuzz\\.[a-z]+\\.(manifest|pickle|weights)"
  cli         "^cli\\.|^mpi\\.cli\\.|^tools\\.terminal_text|^slurm\\.submit"
  comm        "^mpi\\.comm\\.|^unit\\.comm_|bench_allreduce|bench_control"
  config      "config"
  data        "^data\\.|^unit\\.data_|^mpi\\.data|data_stage|^fuzz\\.(replay|run)\\.(importers|images|tokenizer|labelled_text|fields)|^hostile\\.data|^train\\.fields"
  ddp         "ddp|^train\\.equivalence"
  doctor      "doctor|preflight"
  env         "^unit\\.env_|env\\.|fuzz\\.[a-z]+\\.environment|^slurm\\.env_|^cli\\.launch|bad_environment|torchrun|check_env_views|hostlist|^unit\\.slurm_nodes|rank_device"
  examples    "_example|^slurm\\.examples|sbatch_scripts|custom_model"
  hostile     "^hostile\\.|^fuzz\\.|bad_input|bad_runs|bad_config|rejects_inconsistent|terminal_text"
  io          "^unit\\.(io_|error)"
  images      "image|cnn|fashion"
  libslurm    "^unit\\.slurm_|^slurm\\.(submit|hostlist|env_)"
  monitor     "^monitor\\.|^unit\\.monitor_|^mpi\\.monitor|flight_recorder|metric_watch|fuzz\\.[a-z]+\\.metrics"
  nccl        "nccl|cuda"
  package     "^package\\."
  pipeline    "pipeline"
  recompute   "recompute"
  requeue     "requeue|restart_ledger|recovery_decisions|restart_record|step_mark|spare|node_probe|fuzz\\.[a-z]+\\.(ledger|node_faults)"
  sandbox     "^slurm\\.cluster|^slurm\\.netns"
  tensorboard "tensorboard"
  tokenizer   "tokenizer|subword|text_classify|labelled_text"
  torchscript "torchscript"
  tools       "^tools\\."
  train       "^train\\.|^unit\\.train_|^mpi\\.recompute|^mpi\\.materialize|^scale\\.train"
  watchdog    "watchdog|rank_hung"
  zero        "zero")

function(_cohort_area_labels name out)
  set(labels "")
  set(table ${COHORT_TEST_AREAS})
  while(table)
    list(POP_FRONT table label regex)
    if(name MATCHES "${regex}")
      list(APPEND labels ${label})
    endif()
  endwhile()
  set(${out} ${labels} PARENT_SCOPE)
endfunction()

# cohort_test(NAME name LABELS l... COMMAND cmd... [TIMEOUT s] [FIXTURES f...] [ENVIRONMENT e...]
#             [WILL_FAIL])
function(cohort_test)
  cmake_parse_arguments(T "WILL_FAIL" "NAME;TIMEOUT" "LABELS;COMMAND;FIXTURES;ENVIRONMENT" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT ${COHORT_TEST_TIMEOUT})
  endif()
  add_test(NAME ${T_NAME} COMMAND ${T_COMMAND})
  _cohort_area_labels(${T_NAME} areas)
  list(APPEND T_LABELS ${areas})
  list(REMOVE_DUPLICATES T_LABELS)
  set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT}
                                            SKIP_RETURN_CODE 79)
  if(T_FIXTURES)
    set_tests_properties(${T_NAME} PROPERTIES FIXTURES_REQUIRED "${T_FIXTURES}")
  endif()
  # Every test runs its ranks on this host: Open MPI's TCP transport may use loopback (Open MPI 5
  # otherwise warns, rank by rank, that it finds no interface pair it trusts).
  set_tests_properties(${T_NAME} PROPERTIES ENVIRONMENT
                       "OMPI_MCA_btl_tcp_if_include=lo;${T_ENVIRONMENT}")
  # The Python checks' `assert`s stay on whatever the caller's environment says: PYTHONOPTIMIZE
  # would turn them into no-ops and `assert False` into a pass (issue 49; tools.python_asserts).
  set_tests_properties(${T_NAME} PROPERTIES ENVIRONMENT_MODIFICATION "PYTHONOPTIMIZE=unset:")
  if(T_WILL_FAIL)
    set_tests_properties(${T_NAME} PROPERTIES WILL_FAIL TRUE)
  endif()
endfunction()

# cohort_mpi_test(NAME name RANKS n COMMAND cmd...): runs cmd under mpirun with n ranks.
function(cohort_mpi_test)
  cmake_parse_arguments(T "" "NAME;RANKS;TIMEOUT" "COMMAND" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT ${COHORT_TEST_TIMEOUT})
  endif()
  cohort_test(NAME ${T_NAME} LABELS mpi TIMEOUT ${T_TIMEOUT}
              COMMAND ${MPIEXEC_EXECUTABLE} ${COHORT_MPIEXEC_FLAGS} -np ${T_RANKS} ${T_COMMAND})
endfunction()
