// Transfer plans (transfer_plan.hpp): building them from a stage's actions, and their invariants.
// The simulation that checks them for stalls is stall_check.cpp.
#include "cohort/pipeline/transfer_plan.hpp"

#include <map>
#include <tuple>

#include "cohort/error.hpp"

namespace cohort::pipeline {
namespace {

using Kind = PlannedTransfer::Kind;

std::string action_name(const Action& action) {
  return (action.kind == Action::Kind::kForward ? "F" : "B") + std::to_string(action.micro);
}

// The receive action k needs: an activation from stage - 1 for a forward (unless first), a
// gradient from stage + 1 for a backward (unless last).
std::optional<PlannedTransfer> input_of(const TransferPlan& plan, std::size_t k) {
  const Action& a = plan.actions[k];
  const bool forward = a.kind == Action::Kind::kForward;
  if (forward ? plan.stage == 0 : plan.stage + 1 == plan.stages) return std::nullopt;
  return PlannedTransfer{false, forward ? Kind::kActivation : Kind::kGradient, a.micro,
                         forward ? plan.stage - 1 : plan.stage + 1, k};
}

// The send of action k's output: a forward's activation to stage + 1 (unless last), a
// backward's input gradient to stage - 1 (unless first).
std::optional<PlannedTransfer> output_of(const TransferPlan& plan, std::size_t k) {
  const Action& a = plan.actions[k];
  const bool forward = a.kind == Action::Kind::kForward;
  if (forward ? plan.stage + 1 == plan.stages : plan.stage == 0) return std::nullopt;
  return PlannedTransfer{true, forward ? Kind::kActivation : Kind::kGradient, a.micro,
                         forward ? plan.stage + 1 : plan.stage - 1, k};
}

bool same(const PlannedTransfer& a, const PlannedTransfer& b) {
  return a.send == b.send && a.kind == b.kind && a.micro == b.micro && a.peer == b.peer &&
         a.action == b.action;
}

// One transfer of `plan`, issued in a group before action `before`: the one its action implies,
// at a time it can run (a send after its action computed, a receive before its action needs it).
std::optional<std::string> transfer_error(const TransferPlan& plan, std::size_t before,
                                          const PlannedTransfer& t) {
  const auto error = [&](const std::string& what) {
    return "stage " + std::to_string(plan.stage) + ": " + describe(t) + what;
  };
  if (t.action >= plan.actions.size()) return error(" names an action past the step's end");
  const auto implied = t.send ? output_of(plan, t.action) : input_of(plan, t.action);
  const std::string action = action_name(plan.actions[t.action]);
  if (!implied || !same(*implied, t)) return error(" is not a transfer of " + action);
  if (t.send && before <= t.action) return error(" is issued before " + action + " computes");
  if (!t.send && before > t.action) return error(" is issued after " + action + " needs it");
  return std::nullopt;
}

// One stage's plan on its own: groups in order, each transfer lawful, one of each implied.
std::optional<std::string> stage_error(const TransferPlan& plan, int stage, int stages) {
  const std::string where = "stage " + std::to_string(stage) + ": ";
  if (plan.stage != stage || plan.stages != stages) return where + "the plan is another stage's";
  const std::size_t n = plan.actions.size();
  std::vector<int> sends(n, 0), receives(n, 0);
  std::size_t previous = 0;
  for (const auto& group : plan.groups) {
    if (group.transfers.empty()) return where + "an empty group";
    if (group.before < previous || group.before > n) return where + "groups out of order";
    previous = group.before;
    for (const auto& t : group.transfers) {
      if (auto error = transfer_error(plan, group.before, t)) return error;
      ++(t.send ? sends : receives)[t.action];
    }
  }
  for (std::size_t k = 0; k < n; ++k) {
    const int wanted_receives = input_of(plan, k) ? 1 : 0,
              wanted_sends = output_of(plan, k) ? 1 : 0;
    if (receives[k] == wanted_receives && sends[k] == wanted_sends) continue;
    const bool receive_wrong = receives[k] != wanted_receives;
    return where + action_name(plan.actions[k]) + " has " +
           std::to_string(receive_wrong ? receives[k] : sends[k]) +
           (receive_wrong ? " receives, not " : " sends, not ") +
           std::to_string(receive_wrong ? wanted_receives : wanted_sends);
  }
  return std::nullopt;
}

// Across stages: every send has exactly one receive of the same micro-batch and kind on its peer.
std::optional<std::string> pairing_error(const std::vector<TransferPlan>& per_stage) {
  using Key = std::tuple<int, int, int, int>;  // source, destination, kind, micro
  std::map<Key, std::pair<int, int>> counts;   // sends, receives
  std::map<Key, const PlannedTransfer*> example;
  for (const auto& plan : per_stage) {
    for (const auto& group : plan.groups) {
      for (const auto& t : group.transfers) {
        const Key key{t.send ? plan.stage : t.peer, t.send ? t.peer : plan.stage,
                      static_cast<int>(t.kind), t.micro};
        auto& count = counts[key];
        ++(t.send ? count.first : count.second);
        example.emplace(key, &t);
      }
    }
  }
  for (const auto& [key, count] : counts) {
    if (count.first == 1 && count.second == 1) continue;
    return "stage " + std::to_string(std::get<0>(key)) + " to " + std::to_string(std::get<1>(key)) +
           ": " + std::to_string(count.first) + " sends and " + std::to_string(count.second) +
           " receives of " + (std::get<2>(key) == static_cast<int>(Kind::kActivation) ? "a" : "g") +
           std::to_string(std::get<3>(key));
  }
  return std::nullopt;
}

}  // namespace

int transfer_tag(const PlannedTransfer& transfer) {
  return 2 * transfer.micro + (transfer.kind == Kind::kGradient ? 1 : 0);
}

std::string describe(const PlannedTransfer& transfer) {
  return std::string(transfer.send ? "send " : "recv ") +
         (transfer.kind == Kind::kActivation ? "a" : "g") + std::to_string(transfer.micro) +
         (transfer.send ? " to " : " from ") + std::to_string(transfer.peer);
}

std::string describe(const TransferPlan& plan) {
  std::string out;
  std::size_t g = 0;
  for (std::size_t k = 0; k <= plan.actions.size(); ++k) {
    for (; g < plan.groups.size() && plan.groups[g].before == k; ++g) {
      std::string group;
      for (const auto& t : plan.groups[g].transfers)
        group += (group.empty() ? "" : ", ") + describe(t);
      out += (out.empty() ? "{" : " {") + group + "}";
    }
    if (k < plan.actions.size()) out += (out.empty() ? "" : " ") + action_name(plan.actions[k]);
  }
  return out;
}

const char* to_string(PlanMode mode) { return mode == PlanMode::kAhead ? "ahead" : "paired"; }

TransferPlan plan_transfers(const std::vector<Action>& actions, int stages, int stage,
                            PlanMode mode) {
  COHORT_CHECK(stages >= 1 && stage >= 0 && stage < stages, Error, "transfer plan: stage ", stage,
               " outside 0..", stages - 1);
  TransferPlan plan{stage, stages, actions, {}};
  const std::size_t n = actions.size();
  for (std::size_t k = 0; k <= n; ++k) {
    TransferGroup group{k, {}};
    const auto add = [&group](std::optional<PlannedTransfer> t) {
      if (t) group.transfers.push_back(*t);
    };
    if (k > 0) add(output_of(plan, k - 1));
    if (mode == PlanMode::kPaired) {
      if (k < n) add(input_of(plan, k));
    } else {
      if (k == 0 && n > 0) add(input_of(plan, 0));
      if (k + 1 < n) add(input_of(plan, k + 1));
    }
    if (!group.transfers.empty()) plan.groups.push_back(std::move(group));
  }
  return plan;
}

std::vector<TransferPlan> plan_pipeline(Schedule schedule, int stages, int micro_batches,
                                        PlanMode mode) {
  std::vector<TransferPlan> plans;
  for (int s = 0; s < stages; ++s) {
    plans.push_back(
        plan_transfers(schedule_actions(schedule, stages, s, micro_batches), stages, s, mode));
  }
  return plans;
}

std::optional<std::string> find_plan_error(const std::vector<TransferPlan>& per_stage) {
  const int stages = static_cast<int>(per_stage.size());
  for (int s = 0; s < stages; ++s) {
    if (auto error = stage_error(per_stage[s], s, stages)) return error;
  }
  return pairing_error(per_stage);
}

}  // namespace cohort::pipeline
