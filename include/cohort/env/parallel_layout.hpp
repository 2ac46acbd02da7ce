// ParallelLayout: how the world's ranks split into data x pipeline x tensor parallel groups.
//
// world = data * pipeline * tensor. The tensor index varies fastest, then the data index, then
// the pipeline stage (Megatron-LM's order):
//     rank = stage * (data * tensor) + data_index * tensor + tensor_index
// so a tensor group is `tensor` adjacent ranks — on one node whenever the node's rank count is a
// multiple of `tensor`, which make() checks (tensor all-reduces run twice per block in forward
// and backward; they belong on the node's fast links). A data-parallel group is the ranks of one
// stage and one tensor index; a pipeline group the ranks of one data index and one tensor index,
// ordered by stage. Pure arithmetic: no MPI, no torch.
#pragma once

#include <string>
#include <vector>

namespace cohort::env {

struct ParallelCoords {
  int data = 0;    // index in the data-parallel dimension
  int stage = 0;   // pipeline stage
  int tensor = 0;  // index in the tensor group
};

class ParallelLayout {
 public:
  // Throws ConfigError naming parallel.pipeline_stages / parallel.tensor when they are < 1, when
  // world is not divisible by their product, or when a tensor group would span nodes
  // (ranks_per_node not a multiple of tensor; 0: unknown, not checked).
  static ParallelLayout make(int world, int pipeline_stages, int tensor, int ranks_per_node = 0);

  int world() const { return data_ * stages_ * tensor_; }
  int data() const { return data_; }
  int stages() const { return stages_; }
  int tensor() const { return tensor_; }

  ParallelCoords coords(int rank) const;
  int rank_of(const ParallelCoords& c) const;
  // The world ranks of each group `rank` belongs to, in group-rank order.
  std::vector<int> data_group(int rank) const;
  std::vector<int> pipeline_group(int rank) const;  // by stage
  std::vector<int> tensor_group(int rank) const;
  // Colors for Communicator::split: equal for the members of one group.
  int data_color(int rank) const;
  int pipeline_color(int rank) const;
  int tensor_color(int rank) const;

  // Throws ConfigError naming the first tensor group whose ranks are not all on one host
  // (`host_of_rank`: any id per rank; a cyclic placement passes make()'s count check but not this).
  void check_tensor_hosts(const std::vector<long long>& host_of_rank) const;

  // One line per rank ("rank 3: data 1 stage 0 tensor 1 | data group [1 3] ...") and the groups.
  std::string describe() const;

 private:
  int data_ = 1, stages_ = 1, tensor_ = 1;
};

}  // namespace cohort::env
