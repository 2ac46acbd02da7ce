#include "cohort/env/parallel_layout.hpp"

#include <sstream>

#include "cohort/error.hpp"
#include "common/checked_math.hpp"

namespace cohort::env {

ParallelLayout ParallelLayout::make(int world, int pipeline_stages, int tensor,
                                    int ranks_per_node) {
  COHORT_CHECK(pipeline_stages >= 1, ConfigError, "parallel.pipeline_stages must be >= 1, not ",
               pipeline_stages);
  COHORT_CHECK(tensor >= 1, ConfigError, "parallel.tensor must be >= 1, not ", tensor);
  // Checked: an int product that wraps would pass the divisibility test or divide by zero.
  const auto model = checked::mul(pipeline_stages, tensor);
  COHORT_CHECK(world >= 1 && model && *model <= world && world % *model == 0, ConfigError,
               "the world size ", world, " is not divisible by parallel.pipeline_stages (",
               pipeline_stages, ") x parallel.tensor (", tensor, ")");
  COHORT_CHECK(ranks_per_node <= 0 || ranks_per_node % tensor == 0, ConfigError,
               "parallel.tensor = ", tensor, " would make tensor groups span nodes (",
               ranks_per_node, " ranks per node); use a divisor of the ranks per node");
  ParallelLayout layout;
  layout.stages_ = pipeline_stages;
  layout.tensor_ = tensor;
  layout.data_ = world / static_cast<int>(*model);
  return layout;
}

ParallelCoords ParallelLayout::coords(int rank) const {
  COHORT_CHECK(rank >= 0 && rank < world(), Error, "rank ", rank, " outside the world ", world());
  return {(rank / tensor_) % data_, rank / (data_ * tensor_), rank % tensor_};
}

int ParallelLayout::rank_of(const ParallelCoords& c) const {
  return c.stage * data_ * tensor_ + c.data * tensor_ + c.tensor;
}

std::vector<int> ParallelLayout::data_group(int rank) const {
  ParallelCoords c = coords(rank);
  std::vector<int> ranks;
  for (c.data = 0; c.data < data_; ++c.data) ranks.push_back(rank_of(c));
  return ranks;
}

std::vector<int> ParallelLayout::pipeline_group(int rank) const {
  ParallelCoords c = coords(rank);
  std::vector<int> ranks;
  for (c.stage = 0; c.stage < stages_; ++c.stage) ranks.push_back(rank_of(c));
  return ranks;
}

std::vector<int> ParallelLayout::tensor_group(int rank) const {
  ParallelCoords c = coords(rank);
  std::vector<int> ranks;
  for (c.tensor = 0; c.tensor < tensor_; ++c.tensor) ranks.push_back(rank_of(c));
  return ranks;
}

int ParallelLayout::data_color(int rank) const {
  const auto c = coords(rank);
  return c.stage * tensor_ + c.tensor;
}

int ParallelLayout::pipeline_color(int rank) const {
  const auto c = coords(rank);
  return c.data * tensor_ + c.tensor;
}

int ParallelLayout::tensor_color(int rank) const {
  const auto c = coords(rank);
  return c.stage * data_ + c.data;
}

void ParallelLayout::check_tensor_hosts(const std::vector<long long>& host_of_rank) const {
  COHORT_CHECK(static_cast<int>(host_of_rank.size()) == world(), Error, "host ids for ",
               host_of_rank.size(), " of ", world(), " ranks");
  for (int first = 0; first < world(); first += tensor_) {
    for (int r = first; r < first + tensor_; ++r) {
      COHORT_CHECK(host_of_rank[r] == host_of_rank[first], ConfigError,
                   "parallel.tensor = ", tensor_, ": the tensor group of ranks ", first, "..",
                   first + tensor_ - 1, " spans hosts (rank ", r,
                   " is elsewhere); place ranks in blocks per node (srun --distribution=block)");
    }
  }
}

namespace {
std::string list(const std::vector<int>& ranks) {
  std::string out = "[";
  for (std::size_t i = 0; i < ranks.size(); ++i) out += (i ? " " : "") + std::to_string(ranks[i]);
  return out + "]";
}
}  // namespace

std::string ParallelLayout::describe() const {
  std::ostringstream out;
  out << "layout: world " << world() << " = data " << data_ << " x pipeline " << stages_
      << " x tensor " << tensor_ << " (rank = stage*" << data_ * tensor_ << " + data*" << tensor_
      << " + tensor)\n";
  for (int r = 0; r < world(); ++r) {
    const auto c = coords(r);
    out << "rank " << r << ": data " << c.data << " stage " << c.stage << " tensor " << c.tensor
        << " | data group " << list(data_group(r)) << " pipeline " << list(pipeline_group(r))
        << " tensor " << list(tensor_group(r)) << "\n";
  }
  return out.str();
}

}  // namespace cohort::env
