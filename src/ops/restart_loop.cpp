#include "ops/restart_loop.hpp"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>

#include "cohort/env/environment.hpp"
#include "cohort/env/hostlist.hpp"
#include "cohort/error.hpp"
#include "cohort/io/files.hpp"
#include "cohort/monitor/sinks.hpp"
#include "cohort/ops/decisions.hpp"
#include "cohort/ops/recovery.hpp"
#include "cohort/ops/restart_record.hpp"
#include "cohort/ops/step_runner.hpp"
#include "cohort/ops/supervision.hpp"
#include "cohort/slurm/failure_requeue.hpp"
#include "cohort/slurm/job.hpp"
#include "cohort/slurm/nodes.hpp"
#include "settings/signals.hpp"

namespace cohort::ops::detail {
namespace {

constexpr int kStopSignals[] = {SIGUSR1, SIGUSR2, SIGTERM, SIGINT, SIGHUP, SIGXCPU};

// The stop signals blocked from the first step to the last decision: one that arrives between two
// steps is taken by stop_signal_pending() (no new step is started: the job is requeued instead),
// not by its default action in the middle of a decision. Those still pending at the end are taken
// here: the decision they would have changed is made.
class StopSignalsHeld {
 public:
  StopSignalsHeld() {
    sigemptyset(&set_);
    for (const int signal : kStopSignals) sigaddset(&set_, signal);
    pthread_sigmask(SIG_BLOCK, &set_, &previous_);
  }
  ~StopSignalsHeld() {
    const timespec now{0, 0};
    while (sigtimedwait(&set_, nullptr, &now) > 0) {
    }
    pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
  }
  StopSignalsHeld(const StopSignalsHeld&) = delete;
  StopSignalsHeld& operator=(const StopSignalsHeld&) = delete;

  // The stop signal sent while no step ran (0: none); taken, so that it is acted on once.
  int pending() const {
    const timespec now{0, 0};
    const int signal = sigtimedwait(&set_, nullptr, &now);
    return signal > 0 ? signal : 0;
  }

 private:
  sigset_t set_{}, previous_{};
};

// The ranks per node of the job: the same on every node, or a ConfigError (a spare must be able
// to take any node's place).
int ranks_per_node(const env::Environment& environment) {
  const auto tasks = environment.get("SLURM_TASKS_PER_NODE").value_or("1");
  const auto counts = env::expand_tasks_per_node(tasks, "SLURM_TASKS_PER_NODE");
  COHORT_CHECK(!counts.empty() && std::all_of(counts.begin(), counts.end(),
                                              [&](int c) { return c == counts.front(); }),
               ConfigError, "slurm.spare_nodes needs the same tasks on every node (",
               "SLURM_TASKS_PER_NODE=", tasks, "): submit with --ntasks-per-node");
  return counts.front();
}

// "rank 1 (node n2)", "ranks 2-3 (node n2)", or "spare n4".
std::string who(const std::string& node, const Allocation& allocation) {
  const auto at = std::find(allocation.active.begin(), allocation.active.end(), node);
  if (at == allocation.active.end()) return "spare " + node;
  const auto first = static_cast<int>(at - allocation.active.begin()) * allocation.ranks_per_node;
  const auto last = first + allocation.ranks_per_node - 1;
  return (first == last ? "rank " + std::to_string(first)
                        : "ranks " + std::to_string(first) + "-" + std::to_string(last)) +
         " (node " + node + ")";
}

std::vector<std::string> names(const std::vector<slurm::FailedNode>& nodes) {
  std::vector<std::string> out;
  for (const auto& node : nodes) out.push_back(node.name);
  return out;
}

std::vector<slurm::FailedNode> only(const std::vector<slurm::FailedNode>& nodes,
                                    const std::vector<std::string>& wanted) {
  std::vector<slurm::FailedNode> out;
  for (const auto& name : wanted) {
    for (const auto& node : nodes) {
      if (node.name == name) {
        out.push_back(node);
        break;
      }
    }
  }
  return out;
}

// The step's nodes and the job's others, for srun.
StepPlacement placement_of(const Allocation& allocation) {
  StepPlacement placement{allocation.active, allocation.left_out};
  placement.exclude.insert(placement.exclude.end(), allocation.spares.begin(),
                           allocation.spares.end());
  return placement;
}

// The process's environment as the training step saw it: its nodes and their tasks (the slurm
// module's requeue names "rank 1 (node n2)" from them).
env::Environment step_environment(const env::Environment& environment,
                                  const Allocation& allocation) {
  auto vars = environment.vars();
  vars["SLURM_JOB_NODELIST"] = env::compress_hostlist(allocation.active);
  vars["SLURM_TASKS_PER_NODE"] = std::to_string(allocation.ranks_per_node) + "(x" +
                                 std::to_string(allocation.active.size()) + ")";
  return env::Environment(std::move(vars));
}

// The job and where its steps run; the ledger knows N once the job ran (a requeued job may hold
// fewer nodes than N + K).
struct SpareJob {
  const settings::Config& config;
  const StepCommand& command;
  const Say& say;
  env::Environment environment;
  slurm::JobIdentity job{};
  slurm::RestartBudgets budgets{};
  int job_nodes = 0;
  int step_nodes = 0;
  Allocation allocation{};
};

void set_up(SpareJob& s, int ranks) {
  const auto nodes =
      env::expand_hostlist(*s.environment.get("SLURM_JOB_NODELIST"), "SLURM_JOB_NODELIST");
  s.job_nodes = static_cast<int>(nodes.size());
  const int per_node = ranks_per_node(s.environment);
  io::make_directories(s.config.train.run_dir);
  auto ledger = slurm::RestartLedger::load(s.budgets.ledger, s.job.job_id);
  s.step_nodes = step_node_count(s.job_nodes, static_cast<int>(s.config.slurm.spare_nodes),
                                 static_cast<int>(ledger.step_nodes));
  COHORT_CHECK(ranks <= 0 || ranks == s.step_nodes * per_node, ConfigError, "-n ", ranks,
               " is not the ", s.step_nodes, " step nodes x ", per_node,
               " tasks of a job with slurm.spare_nodes");
  if (ledger.step_nodes != s.step_nodes) {
    ledger.step_nodes = s.step_nodes;
    ledger.save(s.budgets.ledger);
  }
  s.allocation = initial_allocation(nodes, s.step_nodes, per_node);
}

int ranks_of(const SpareJob& s) {
  return static_cast<int>(s.allocation.active.size()) * s.allocation.ranks_per_node;
}

std::vector<slurm::FailedNode> left_out_before(const Allocation& allocation) {
  std::vector<slurm::FailedNode> nodes;
  for (const auto& name : allocation.left_out) nodes.push_back({name, "left out earlier"});
  return nodes;
}

// The slurm module's requeue, told the whole blame; the batch script's exit code. `requeued` runs
// after the line is said, before the job's node lists are updated.
int requeue(SpareJob& s, const std::string& reason, slurm::RestartCause cause,
            const std::vector<slurm::FailedNode>& faulty,
            const std::vector<slurm::FailedNode>& lost, int step_code,
            const std::function<void()>& requeued = {}) {
  const auto report = [&](const slurm::FailureRequeue& outcome) {
    s.say(outcome.line);
    if (outcome.requeued && requeued) requeued();
  };
  const auto outcome = requeue_after_failure(
      s.config, reason, step_environment(s.environment, s.allocation), report, cause, faulty,
      KnownBlame{lost, left_out_before(s.allocation), s.step_nodes, s.job_nodes});
  return cause == slurm::RestartCause::kPreflight
             ? (outcome.requeued ? 0 : static_cast<int>(ExitCode::kResumable))
             : supervise_exit(step_code, outcome);
}

// Pre-flight over every node of the job, spares included (so that a spare has passed it before
// it joins). Failed nodes are left out while enough healthy ones remain; nullopt: train.
std::optional<int> preflight_with_spares(SpareJob& s) {
  if (!s.config.slurm.preflight) return std::nullopt;
  const auto report = preflight_report(s.config, s.command, ranks_of(s), s.job_nodes, s.say);
  if (!report) return std::nullopt;
  const auto failed = report->failed_nodes();
  const auto placement = plan_preflight(names(failed), s.allocation);
  if (!placement.train) {
    const int code = requeue(s, "pre-flight", slurm::RestartCause::kPreflight, failed, {}, 0);
    return code == 0 ? 0 : report->exit_code();
  }
  std::string line = "pre-flight: " + std::to_string(report->nodes.size()) + " node(s) checked";
  for (const auto& node : only(failed, placement.left_out_now)) {
    line += "; " + node.name + " left out (" + node.problem + ")";
  }
  if (!placement.spares_used.empty()) {
    line += "; spare " + env::compress_hostlist(placement.spares_used) + " joins";
  }
  s.say(line + "; training on " + env::compress_hostlist(placement.next.active) +
        network_note(*report));
  s.allocation = placement.next;
  return std::nullopt;
}

// The nodes to blame for a failed step: those the ranks reported faulty, then those of the job's
// nodes in use the controller counts as failed (waited for, up to slurm.node_failure_wait, only
// when no rank reported one). A controller that cannot say is a warning.
struct Blame {
  std::vector<slurm::FailedNode> faulty;  // reported by a rank (a device fault)
  std::vector<slurm::FailedNode> lost;    // flagged by the controller
  std::vector<slurm::FailedNode> all() const {
    auto nodes = faulty;
    nodes.insert(nodes.end(), lost.begin(), lost.end());
    return nodes;
  }
};

Blame blame(const SpareJob& s) {
  std::vector<std::string> reports;
  Blame found;
  found.faulty = read_fault_reports(s.config.train.run_dir + "/node_faults", reports);
  const auto& blamed = found.faulty;
  std::error_code ignored;
  for (const auto& path : reports) std::filesystem::remove(path, ignored);
  auto in_use = s.allocation.active;
  in_use.insert(in_use.end(), s.allocation.spares.begin(), s.allocation.spares.end());
  try {
    const auto wait = blamed.empty() ? std::chrono::seconds(s.config.slurm.node_failure_wait)
                                     : std::chrono::seconds(0);
    for (auto& node : slurm::failed_nodes(in_use, wait)) {
      if (std::none_of(blamed.begin(), blamed.end(),
                       [&](const slurm::FailedNode& n) { return n.name == node.name; })) {
        found.lost.push_back(std::move(node));
      }
    }
  } catch (const Error& e) {  // said: with nothing blamed, the job is requeued
    std::fprintf(stderr, "cohort: warning: cannot check the job's nodes: %s\n", e.what());
  }
  return found;
}

// The restart's line, as the requeue's: "step failed (exit 76): rank 1 (node n2) lost at step
// 212 (not responding); restarting in job 12 (failure 1/3) on n[1,3-4], leaving out n2, spare
// n4; resuming from step-00000200".
std::string restart_text(const std::string& reason, const Blame& blamed, const RecoveryPlan& plan,
                         const Allocation& before, const RunPoint& at,
                         const std::string& budget_text) {
  std::string line = reason + ": ";
  const std::string step = at.at.step >= 0 ? " at step " + std::to_string(at.at.step) : "";
  for (const auto& node : only(blamed.all(), plan.left_out_now)) {
    const bool reported = !only(blamed.faulty, {node.name}).empty();
    line += who(node.name, before) + (reported ? " faulty" : " lost") + step + " (" + node.problem +
            "); ";
  }
  line += budget_text + " on " + env::compress_hostlist(plan.next.active);
  if (!plan.left_out_now.empty()) {
    line += ", leaving out " + env::compress_hostlist(plan.left_out_now);
  }
  if (!plan.spares_used.empty()) line += ", spare " + env::compress_hostlist(plan.spares_used);
  if (plan.left_out_now.empty()) line += ", no node blamed";
  return line + (at.at.checkpoint.empty() ? "; starting over (no checkpoint yet)"
                                          : "; resuming from " + at.at.checkpoint);
}

// "failure 1/3" of "restarting in job 12 (failure 1/3)".
std::string budget_of(const std::string& text) {
  const auto open = text.rfind('(');
  return open == std::string::npos ? "" : text.substr(open + 1, text.size() - open - 2);
}

// The restart record of a failure at `at`, decided now (its nodes left for the caller):
// `budget_text` is the budget check's ("restarting in job 12 (failure 1/3)").
PendingRestart pending_of(const slurm::JobIdentity& job, const slurm::RestartLedger& ledger,
                          const RunPoint& at, const std::string& reason, const char* kind,
                          const std::string& budget_text) {
  PendingRestart p;
  p.job = job.job_id;
  p.number = job.restart_count + ledger.in_allocation + 1;
  p.kind = kind;
  p.budget = budget_of(budget_text);
  p.cause = reason;
  p.failed_at_step = at.at.step;
  p.resumed_from = at.at.checkpoint;
  p.last_step_ms = at.last_step_ms;
  p.decided_ms = unix_ms();
  return p;
}

// Writes the pending restart record (restart_record.hpp); a stale one is logged first.
// Never throws: the restart or requeue it records has been decided (or done) already; a record
// that cannot be written is a warning.
void record_pending(const std::string& run_dir, const PendingRestart& pending) noexcept {
  try {
    const std::string metrics = run_dir + "/metrics.jsonl";
    const auto stale = write_pending_restart(run_dir, pending);
    if (stale && std::filesystem::exists(metrics)) {
      monitor::JsonlSink(metrics, /*append=*/true).write(*stale);
    }
  } catch (const std::exception& e) {  // said, not swallowed: only the record is lost
    std::fprintf(stderr, "cohort: warning: the restart is not recorded: %s\n", e.what());
  }
}

// After a failed step: a new allocation to run the next step on, or the batch script's exit code.
std::optional<int> recover(SpareJob& s, const StopSignalsHeld& signals, int code) {
  const std::string reason = "step failed (exit " + std::to_string(code) + ")";
  const auto blamed = blame(s);
  const auto at = run_point(s.config);
  const auto ledger = slurm::RestartLedger::load(s.budgets.ledger, s.job.job_id);
  const auto budget = slurm::restart_within_budget(s.job, s.budgets, /*act=*/false, at.at);
  const auto plan = plan_recovery({true, slurm::crash_loop(ledger.last_failure, at.at),
                                   budget.requeued, names(blamed.all()), s.allocation});
  auto pending = pending_of(s.job, ledger, at, reason, "in_allocation", budget.text);
  pending.left_out = only(blamed.all(), plan.left_out_now);
  pending.spares = plan.spares_used;
  pending.nodes = plan.next.active;
  bool requeue_instead = false;
  if (plan.kind == Recovery::kRestart) {
    // A stop signal (preemption, the time limit's warning) that came while no step ran: no new
    // step; the job is requeued for the failure (its budget, crash loop and exclusion), which
    // also brings it back as the signal asked.
    if (const int signal = signals.pending()) {
      s.say(settings::signal_name(signal) + " came before the new step: requeueing instead");
      requeue_instead = true;
    } else {
      const auto acted = slurm::restart_within_budget(s.job, s.budgets, /*act=*/true, at.at);
      record_pending(s.config.train.run_dir, pending);
      s.say(restart_text(reason, blamed, plan, s.allocation, at, acted.text));
      s.allocation = plan.next;
      return std::nullopt;
    }
  }
  return requeue(s, reason, slurm::RestartCause::kFailure, blamed.faulty, blamed.lost, code, [&] {
    if (plan.kind != Recovery::kRequeue && !requeue_instead) return;  // kStop: no record
    pending.kind = "requeue";
    pending.spares.clear();
    pending.nodes.clear();
    pending.decided_ms = unix_ms();
    record_pending(s.config.train.run_dir, pending);
  });
}

}  // namespace

std::optional<PendingRestart> pend_requeue(const settings::Config& config,
                                           const std::string& reason,
                                           const env::Environment& environment) {
  const auto job = slurm::current_job(environment);
  if (!job.in_job) return std::nullopt;
  const auto budgets = restart_budgets(config);
  const auto at = run_point(config);
  const auto ledger = slurm::RestartLedger::load(budgets.ledger, job.job_id);
  const auto would =
      slurm::requeue_within_budget(job, budgets, slurm::RestartCause::kFailure, /*act=*/false);
  return pending_of(job, ledger, at, reason, "requeue", would.text);
}

void settle_requeue(const settings::Config& config, std::optional<PendingRestart> pending,
                    const slurm::FailureRequeue& outcome) {
  // Only a requeue this process made: a step that ended because the job was requeued already
  // (a preemption: rank 0 requeued, Slurm ended the step) leaves no restart record. Written after
  // the requeue, in the KillWait seconds Slurm gives this process before its SIGKILL.
  if (!pending || !outcome.requeued) return;
  pending->left_out = outcome.blamed;
  pending->decided_ms = unix_ms();
  record_pending(config.train.run_dir, *pending);
}

int supervise_with_spares(const settings::Config& config, const StepCommand& command, int ranks,
                          const Say& say) {
  SpareJob s{config, command, say, env::Environment::from_process()};
  s.job = slurm::current_job(s.environment);
  s.budgets = restart_budgets(config);
  set_up(s, ranks);
  if (const auto stop = preflight_with_spares(s)) return *stop;
  const StopSignalsHeld signals;
  while (true) {
    const auto end = run_training_step(
        config, step_argv(command, "train", {}, ranks_of(s), false, placement_of(s.allocation)));
    const int code = end.code;
    say("cohort-train: step ended with exit code " + std::to_string(code));
    if (end.preempted && requeue_after_step(code)) return 0;  // Slurm ended it: rank 0 requeued
    if (!requeue_after_step(code)) return code;
    if (const auto exit = recover(s, signals, code)) return *exit;
  }
}

}  // namespace cohort::ops::detail
