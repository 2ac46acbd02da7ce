// find_stall (transfer_plan.hpp): every stage's host and communication simulated together, in
// the manner of the schedule test's simulation, until nothing can move.
//
// Each transfer is an operation that is issued (its group issued by the host), then active
// (Independent: at once; InOrderStream: once its group is the stream's running one, i.e. every
// earlier group of the stage has completed), then done: the moment it and its partner are both
// active. Partners are fixed before the run, by the semantics' matching rule, since the order in
// which each stage issues its transfers does not depend on timing. Hosts advance as far as their
// waits allow, streams as far as their groups complete, a stage being looked at again when one of
// its partners completes; every step is monotone, so the fixed point does not depend on the
// order of the looks. It either has every stage at its step's end with everything done, or is a
// stall, described stage by stage.
#include <map>
#include <tuple>

#include "cohort/pipeline/transfer_plan.hpp"

namespace cohort::pipeline {
namespace {

std::string action_name(const Action& action) {
  return (action.kind == Action::Kind::kForward ? "F" : "B") + std::to_string(action.micro);
}

struct Op {
  int stage = 0;
  std::size_t group = 0;  // in its stage's plan
  const PlannedTransfer* transfer = nullptr;
  int partner = -1;
  bool active = false;
  bool done = false;
};

struct StageRun {
  const TransferPlan* plan = nullptr;
  std::vector<std::vector<int>> group_ops;  // operation ids, per group
  std::vector<int> input_op;                // per action: the receive it waits for, or -1
  std::size_t next_action = 0;              // the host's: the action it computes next
  std::size_t issued = 0;                   // groups issued by the host
  std::size_t running = 0;                  // InOrderStream: the stream's current group
  std::size_t started = 0;                  // InOrderStream: groups whose operations are active
};

class Simulation {
 public:
  Simulation(const std::vector<TransferPlan>& plans, Semantics semantics) : semantics_(semantics) {
    for (const auto& plan : plans) add_stage(plan);
    queued_.assign(stages_.size(), false);
  }

  // Fixes each operation's partner. Returns a send paired with a receive of another micro-batch
  // or kind, which only InOrderStream can do (order pairs there, not tags).
  std::optional<std::string> pair() {
    using Key = std::tuple<int, int, int>;  // source, destination, tag (-1: none, as NCCL)
    std::map<Key, std::pair<std::vector<int>, std::vector<int>>> lines;  // sends, receives
    for (int id = 0; id < static_cast<int>(ops_.size()); ++id) {
      const Op& op = ops_[id];
      const PlannedTransfer& t = *op.transfer;
      const int tag = semantics_ == Semantics::kIndependent ? transfer_tag(t) : -1;
      auto& line = lines[{t.send ? op.stage : t.peer, t.send ? t.peer : op.stage, tag}];
      (t.send ? line.first : line.second).push_back(id);
    }
    for (const auto& entry : lines) {
      const auto& [sends, receives] = entry.second;
      for (std::size_t i = 0; i < sends.size() && i < receives.size(); ++i) {
        if (auto error = join(sends[i], receives[i])) return error;
      }
    }
    return std::nullopt;
  }

  // nullopt when every stage ends its step; the stall otherwise.
  std::optional<std::string> run() {
    for (std::size_t s = 0; s < stages_.size(); ++s) wake(static_cast<int>(s));
    while (!ready_.empty()) {
      const int s = ready_.back();
      ready_.pop_back();
      queued_[s] = false;
      for (bool moved = true; moved;) {
        moved = advance_host(stages_[s]);
        moved = advance_stream(stages_[s]) || moved;
      }
    }
    std::string stall;
    for (const auto& stage : stages_) {
      if (finished(stage)) continue;
      stall += (stall.empty() ? "stall: " : "; ") + describe_stage(stage);
    }
    if (stall.empty()) return std::nullopt;
    return stall;
  }

 private:
  void add_stage(const TransferPlan& plan) {
    StageRun stage;
    stage.plan = &plan;
    stage.input_op.assign(plan.actions.size(), -1);
    for (const auto& group : plan.groups) {
      std::vector<int> ids;
      for (const auto& t : group.transfers) {
        ids.push_back(static_cast<int>(ops_.size()));
        if (!t.send) stage.input_op[t.action] = ids.back();
        ops_.push_back(Op{plan.stage, stage.group_ops.size(), &t});
      }
      stage.group_ops.push_back(std::move(ids));
    }
    stages_.push_back(std::move(stage));
  }

  std::optional<std::string> join(int send, int receive) {
    const PlannedTransfer& s = *ops_[send].transfer;
    const PlannedTransfer& r = *ops_[receive].transfer;
    if (s.kind != r.kind || s.micro != r.micro) {
      return "mismatch: stage " + std::to_string(ops_[send].stage) + "'s " + describe(s) +
             " meets stage " + std::to_string(ops_[receive].stage) + "'s " + describe(r) +
             " (transfers pair in issue order under " + to_string(semantics_) + ")";
    }
    ops_[send].partner = receive;
    ops_[receive].partner = send;
    return std::nullopt;
  }

  void activate(int id) {
    Op& op = ops_[id];
    op.active = true;
    if (op.partner < 0 || !ops_[op.partner].active) return;
    op.done = ops_[op.partner].done = true;
    wake(ops_[op.partner].stage);  // its host or stream may move now
  }

  void wake(int stage) {
    if (queued_[stage]) return;
    queued_[stage] = true;
    ready_.push_back(stage);
  }

  // Issues the groups due before the next action and computes actions while their receives are
  // done; true when it moved.
  bool advance_host(StageRun& stage) {
    const auto& groups = stage.plan->groups;
    const std::size_t n = stage.plan->actions.size();
    bool moved = false;
    for (;;) {
      for (; stage.issued < groups.size() && groups[stage.issued].before == stage.next_action;
           ++stage.issued) {
        if (semantics_ == Semantics::kIndependent) {
          for (const int id : stage.group_ops[stage.issued]) activate(id);
        }
        moved = true;
      }
      if (stage.next_action == n) return moved;
      const int input = stage.input_op[stage.next_action];
      if (input >= 0 && !ops_[input].done) return moved;
      ++stage.next_action;
      moved = true;
    }
  }

  // InOrderStream: starts the running group, moves past it once all of it is done.
  bool advance_stream(StageRun& stage) {
    if (semantics_ != Semantics::kInOrderStream) return false;
    bool moved = false;
    while (stage.running < stage.issued) {
      const auto& ids = stage.group_ops[stage.running];
      if (stage.started == stage.running) {
        for (const int id : ids) activate(id);
        ++stage.started;
        moved = true;
      }
      for (const int id : ids) {
        if (!ops_[id].done) return moved;
      }
      ++stage.running;
      moved = true;
    }
    return moved;
  }

  bool finished(const StageRun& stage) const {
    if (stage.next_action < stage.plan->actions.size()) return false;
    for (const auto& ids : stage.group_ops) {
      for (const int id : ids) {
        if (!ops_[id].done) return false;
      }
    }
    return stage.issued == stage.group_ops.size();
  }

  // "stage 1 waits for recv a1 from 0 before F1, its stream stuck on {recv a1 from 0}".
  std::string describe_stage(const StageRun& stage) const {
    const TransferPlan& plan = *stage.plan;
    std::string out = "stage " + std::to_string(plan.stage) + " waits for ";
    if (stage.next_action < plan.actions.size()) {
      const int input = stage.input_op[stage.next_action];
      out += describe(*ops_[input].transfer) + " before " +
             action_name(plan.actions[stage.next_action]);
      if (semantics_ == Semantics::kIndependent) out += " (" + partner_state(input) + ")";
    } else {
      out += first_pending(stage) + " at the step's end";
    }
    if (semantics_ == Semantics::kInOrderStream && stage.running < stage.issued) {
      std::string pending;
      for (const int id : stage.group_ops[stage.running]) {
        if (ops_[id].done) continue;
        pending += (pending.empty() ? "" : ", ") + describe(*ops_[id].transfer) + " (" +
                   partner_state(id) + ")";
      }
      out += ", its stream stuck on {" + pending + "}";
    }
    return out;
  }

  // Where operation `id`'s partner is: "stage 1's send queued" (issued, behind the running
  // group) or "stage 1's send not issued".
  std::string partner_state(int id) const {
    const Op& op = ops_[id];
    if (op.partner < 0) return "no partner";
    const Op& partner = ops_[op.partner];
    const std::string who = "stage " + std::to_string(partner.stage) + "'s " +
                            (partner.transfer->send ? "send" : "recv");
    if (partner.active) return who + " running";
    return who + (partner.group < stages_[partner.stage].issued ? " queued" : " not issued");
  }

  std::string first_pending(const StageRun& stage) const {
    for (const auto& ids : stage.group_ops) {
      for (const int id : ids) {
        if (!ops_[id].done) return describe(*ops_[id].transfer);
      }
    }
    return "nothing";
  }

  Semantics semantics_;
  std::vector<Op> ops_;
  std::vector<StageRun> stages_;
  std::vector<int> ready_;    // stages that may move
  std::vector<bool> queued_;  // per stage: in ready_
};

}  // namespace

const char* to_string(Semantics semantics) {
  return semantics == Semantics::kInOrderStream ? "in-order stream (NCCL)" : "independent (MPI)";
}

std::optional<std::string> find_stall(const std::vector<TransferPlan>& per_stage,
                                      Semantics semantics) {
  if (auto error = find_plan_error(per_stage)) return "invalid plan: " + *error;
  Simulation simulation(per_stage, semantics);
  if (auto mismatch = simulation.pair()) return mismatch;
  return simulation.run();
}

}  // namespace cohort::pipeline
