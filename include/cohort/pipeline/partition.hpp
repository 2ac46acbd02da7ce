// Partitioning a sequence of blocks into contiguous pipeline stages.
//
// A partition is given as the first block of each stage plus the end: bounds[s] .. bounds[s+1]
// are stage s's blocks, bounds.front() == 0, bounds.back() == blocks. Every stage gets at least
// one block. Pure: no torch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cohort::pipeline {

// Balanced by weight (parameter count): the contiguous split that minimises the heaviest stage
// (exact, by dynamic programming; ties go to the earliest cut). ConfigError when there are more
// stages than blocks, naming both.
std::vector<int> partition_balanced(const std::vector<std::int64_t>& weights, int stages);

// Explicit: `counts` blocks per stage ("2,3" for parallel.partition). ConfigError unless there is
// one positive count per stage and they add up to the model's blocks.
std::vector<int> partition_explicit(const std::vector<std::int64_t>& counts, int blocks,
                                    int stages);

}  // namespace cohort::pipeline
