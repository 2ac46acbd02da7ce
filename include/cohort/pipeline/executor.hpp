// Executor: runs one stage's schedule for a training step (or a forward-only pass).
//
// Protocol, per step, on every rank of a pipeline group (communicator rank = stage index):
//  - The actions come from schedule_actions(); they run in order. A forward takes its input from
//    the data (stage 0) or from a receive of stage - 1's activation; its output is sent to
//    stage + 1, or, on the last stage, turned into the micro-batch's loss at once. A backward
//    receives the output's gradient from stage + 1 (or starts from the loss), runs autograd
//    through the stage, and sends the input's gradient to stage - 1.
//  - Transfers follow the stage's TransferPlan (transfer_plan.hpp), group by group, each group
//    one p2p_group_async: on MPI the Ahead plan (each receive posted one action ahead of the
//    action that needs it, so the transfer overlaps the current computation; each send posted
//    once its action has computed), on NCCL the Paired plan (before action k, the send of action
//    k-1's output and the receive of action k's input as one NCCL group; nothing posted ahead,
//    which NCCL's one in-order stream per communicator would deadlock on). The constructor checks
//    every stage's plan with find_stall under the backend's rules before the first step; the
//    unit tests prove every schedule for 2..8 stages and 1..32 micro-batches. A receive is waited
//    for just before its action; a send is let go once it has finished (checked before each
//    action; the rest are waited for at the end of the step). Tags keep activation (2m) and
//    gradient (2m + 1) messages of micro-batch m apart on MPI; NCCL pairs them by order, which
//    the plans keep the same on both sides. Received buffers are float32 of shape
//    [micro-batch size] + options.input_shape (or output_shape for gradients): the shapes are
//    known, never exchanged.
//  - The activations of a micro-batch stay alive from its forward to its backward; the executor
//    counts them (peak_in_flight, peak_activation_bytes of the tensors crossing stage borders).
// A step's gradients are accumulated over its micro-batches; hooks.before_backward tells the
// caller which backward is the step's last (where data-parallel synchronisation belongs).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "cohort/comm/communicator.hpp"
#include "cohort/pipeline/schedule.hpp"
#include "cohort/pipeline/transfer_plan.hpp"

namespace cohort::pipeline {

struct ExecutorOptions {
  Schedule schedule = Schedule::kOneFOneB;
  int micro_batches = 1;
  int stage = 0;
  int stages = 1;
  std::vector<std::int64_t> input_shape;        // per sample, received from stage - 1
  std::vector<std::int64_t> output_shape;       // per sample, sent to stage + 1
  c10::Device device = c10::Device(c10::kCPU);  // where received buffers live
  // Bytes of memory in use now (the trainer passes the host heap's); sampled after every forward
  // and backward for StepStats::peak_memory_growth. Empty: not measured.
  std::function<std::int64_t()> memory_in_use;
};

struct StepHooks {
  // The stage on one micro-batch (stage 0: the data; elsewhere the received activation).
  std::function<at::Tensor(int micro, const at::Tensor& input)> forward;
  // Last stage: the micro-batch's loss from the stage's output, scaled so that the step's loss
  // is the sum over micro-batches.
  std::function<at::Tensor(int micro, const at::Tensor& output)> loss;
  // Before each backward; `last` is true for the step's final one.
  std::function<void(int micro, bool last)> before_backward;
};

struct StepStats {
  double loss = 0;  // last stage: the sum of the micro-batches' losses; 0 elsewhere
  int peak_in_flight = 0;
  std::int64_t peak_activation_bytes = 0;
  // The most memory in use above the step's start (autograd graphs and activations included).
  std::int64_t peak_memory_growth = 0;
  double compute_s = 0;  // forwards, losses and backwards of this stage
  double wait_s = 0;     // blocked on receives and on the step's sends
  double step_s = 0;
};

class Executor {
 public:
  // `pipe`: the pipeline group (nullptr or size 1 for a single stage). Not owned.
  Executor(comm::Communicator* pipe, ExecutorOptions options);

  // One step. `inputs` are the micro-batches' inputs: stage 0 computes on them, every stage
  // takes its micro-batch sizes from them. Collective over the pipeline group.
  StepStats train_step(const std::vector<at::Tensor>& inputs, const StepHooks& hooks);

  // Forward only (evaluation, no autograd graph): returns the last stage's output, an undefined
  // tensor elsewhere. Collective over the pipeline group. A blocking receive before the forward,
  // a blocking send after it: the plan of one forward, which needs no group and is stall-free on
  // both backends (tests/unit/pipeline/test_transfer_plan.cpp, forward_only_pass).
  at::Tensor forward_only(const at::Tensor& input,
                          const std::function<at::Tensor(const at::Tensor&)>& forward);

  const std::vector<Action>& actions() const { return plan_.actions; }
  // This stage's transfers, in the mode of the pipeline group's backend.
  const TransferPlan& plan() const { return plan_; }

 private:
  class StepRun;
  at::Tensor receive_buffer(const std::vector<std::int64_t>& shape, std::int64_t batch) const;
  void connect_neighbours();  // NCCL: the point-to-point connections made before any plan runs

  comm::Communicator* pipe_;
  ExecutorOptions options_;
  TransferPlan plan_;
};

}  // namespace cohort::pipeline
