// Transfer plans: the point-to-point traffic of one pipeline stage in one step, in the order the
// executor issues it, and a checker that proves a set of plans (one per stage) cannot stall.
//
// A stage's actions (schedule.hpp) imply its transfers: a forward receives activation a<m> from
// stage - 1 (unless first) and sends its own to stage + 1 (unless last); a backward receives
// gradient g<m> from stage + 1 (unless last) and sends its input's to stage - 1 (unless first).
// The plan says when each is started: as groups, each issued together just before action
// `before` computes (before == actions.size(): after the last). Action k's receive is waited for
// just before action k computes; sends are waited for at the step's end. Two modes:
//   Ahead  (MPI): before action k, {send of action k-1's output, receive of action k+1's input}
//          (before action 0 also action 0's receive), the last send after the last action. Every
//          receive is posted one action early, so its transfer overlaps action k's computation.
//   Paired (NCCL): before action k, {send of action k-1's output, receive of action k's input};
//          the last send after the last action. No receive is posted ahead of its action.
// Why two: MPI's Isend/Irecv are independent requests, matched by tag whenever both sides have
// posted them. NCCL puts every operation of a communicator on one in-order CUDA stream, its
// send and recv are rendezvous operations (neither completes before the peer's matching one
// runs; NCCL may finish a small send sooner, which only lets everything move sooner, so
// rendezvous is the case to prove), and they match per (source, destination) in issue order,
// without tags. A group is one ncclGroupStart/End: its operations progress together, and the
// next group starts only when the whole group has completed. Under those rules Ahead's early
// receive, or a send and a receive issued apart, stall: with 2 stages of 1F1B, stage 0's stream
// sits in {send a0, recv g0} while stage 1's sits in {recv a1}, each waiting for an operation
// queued behind the other's.
// Paired fuses exactly the two transfers that both neighbours need next (Megatron-LM's
// send_forward_recv_backward), so every stage's current group finds its partners running.
// The rules assume the connections exist: NCCL makes one the first time two ranks use it, on the
// host inside ncclGroupEnd, waiting for the peer's own first transfer; the executor makes them
// all at start-up with one group per stage in both directions (Executor::connect_neighbours).
//
// find_stall() simulates every stage's host and communication together under either rule and
// names the first stall; tests/unit/pipeline/test_transfer_plan.cpp runs it over every schedule,
// 2..8 stages and 1..32 micro-batches, and the executor runs it for its own configuration before
// its first step. Pure: no torch, no MPI.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "cohort/pipeline/schedule.hpp"

namespace cohort::pipeline {

// One send or receive of a stage.
struct PlannedTransfer {
  enum class Kind { kActivation, kGradient };
  bool send = false;
  Kind kind = Kind::kActivation;
  int micro = 0;
  int peer = 0;            // the other stage
  std::size_t action = 0;  // the action whose output it sends, or whose input it receives
};

// The tag on tagged transports (MPI): 2m for activations, 2m + 1 for gradients. NCCL has none.
int transfer_tag(const PlannedTransfer& transfer);

// "send a3 to 1", "recv g0 from 2".
std::string describe(const PlannedTransfer& transfer);

// Transfers started together (one ncclGroupStart/End on NCCL).
struct TransferGroup {
  std::size_t before = 0;  // issued just before action `before` computes; actions.size(): after
  std::vector<PlannedTransfer> transfers;
};

struct TransferPlan {
  int stage = 0;
  int stages = 1;
  std::vector<Action> actions;
  std::vector<TransferGroup> groups;  // in issue order; `before` never decreases; none empty
};

// The actions with each group before the action it precedes, for logs and tests:
// "F0 {send a0 to 1} F1 {send a1 to 1, recv g0 from 1} B0 {recv g1 from 1} B1".
std::string describe(const TransferPlan& plan);

enum class PlanMode { kAhead, kPaired };
const char* to_string(PlanMode mode);

// The plan of `stage` (0..stages-1) for its `actions`, as the mode above says.
TransferPlan plan_transfers(const std::vector<Action>& actions, int stages, int stage,
                            PlanMode mode);

// Every stage's plan for one step of `schedule`.
std::vector<TransferPlan> plan_pipeline(Schedule schedule, int stages, int micro_batches,
                                        PlanMode mode);

// The first broken invariant of per_stage (indexed by stage), in one line, or nullopt: groups in
// order of `before`, none empty; every transfer is the one its action implies (peer, kind,
// micro), a send issued after its action, a receive before it; every action that needs input has
// exactly one receive, every action with output to send exactly one send; every send has exactly
// one receive of the same micro-batch and kind on its peer, and every receive one send.
std::optional<std::string> find_plan_error(const std::vector<TransferPlan>& per_stage);

// How the communication library runs transfers (see above).
enum class Semantics {
  kInOrderStream,  // NCCL: one in-order stream per communicator; groups one after another; a
                   // send and its receive (matched per source and destination in issue order)
                   // complete only when both are in running groups
  kIndependent,    // MPI: each transfer runs on its own once posted; matched by tag
};
const char* to_string(Semantics semantics);

// Simulates per_stage's hosts and communication together: each host issues its groups in order
// and waits for action k's receive before computing action k, then for everything at the end;
// computing takes no time. Returns the first stall, in one line ("stall: stage 0 waits for recv
// g0 from 1 before B0, its stream stuck on {recv g0 from 1}; stage 1 ..."), a transfer that NCCL
// would pair with the wrong one, or a broken invariant (find_plan_error); nullopt when every
// stage completes its step.
std::optional<std::string> find_stall(const std::vector<TransferPlan>& per_stage,
                                      Semantics semantics);

}  // namespace cohort::pipeline
