// ZeRO 3 over a Stage's blocks: each block is a unit of DistributedDataParallel (parameters
// gathered before the block's forward and before its backward, freed after each), with the next
// block's gather issued ahead in both directions.
#pragma once

#include <map>
#include <string>

#include "cohort/ddp/distributed_data_parallel.hpp"
#include "cohort/pipeline/stage.hpp"

namespace cohort::train {

// DdpOptions::units for `stage`: each parameter's block; one used by several blocks (GPT's tied
// embedding) has none and stays whole.
std::map<std::string, int> zero_units(const pipeline::Stage& stage);

// The stage's block hooks driving `ddp`'s acquire/prefetch/release. Both must outlive the
// stage's use.
void connect_zero3(pipeline::Stage& stage, ddp::DistributedDataParallel& ddp);

}  // namespace cohort::train
