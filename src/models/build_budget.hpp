// BuildBudget: while it lives, every CPU allocation of the thread that made it is counted, and
// one that would take the memory held past the budget is refused before it is made: a
// ConfigError naming the model and the sizes it was built from, never a host driven out of
// memory by a size a file claims (a dataset's vocab_size of 2^31 is a 2^31 x width embedding).
// models::build_model holds one around every model's construction (the trainer's, predict's,
// eval's, doctor's); model.max_build_gib says the budget (0: this process's share of the memory
// it may use, bytes_for()).
//
// Under model.materialize = own the model is a skeleton (materialize.hpp): its large tensors
// are reserved, not held, so the budget bounds each allocation instead of their sum. Nested in a
// SkeletonScope, it counts what the skeleton is asked for. Other threads' allocations pass.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace cohort::models {

class BuildBudget {
 public:
  // `what`: the model and the sizes it is built from, for the refusal. bytes > 0.
  BuildBudget(std::uint64_t bytes, bool per_allocation, std::string what);
  ~BuildBudget();
  BuildBudget(const BuildBudget&) = delete;
  BuildBudget& operator=(const BuildBudget&) = delete;

  // The budget model.max_build_gib says; when it is 0, what this process may hold (the least of
  // the host's memory, its cgroup's limit and its address space limit) shared by the node's
  // ranks. Gradients and optimizer state come after the build: `cohort doctor` checks those.
  static std::uint64_t bytes_for(double max_build_gib);

  class Allocator;

 private:
  std::unique_ptr<Allocator> allocator_;
};

}  // namespace cohort::models

// The trainer's namespace sees the models' names as before (cohort::train::Model, ...): the train
// module, and plugins and programs written against cohort/train/model.hpp, use them unchanged.
namespace cohort::train {
using namespace ::cohort::models;  // NOLINT(google-build-using-namespace)
}  // namespace cohort::train
