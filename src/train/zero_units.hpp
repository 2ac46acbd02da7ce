// ZeRO 3 over a Stage's blocks: each block is a unit of DistributedDataParallel
// (DdpOptions::units = Stage::parameter_blocks(); a parameter several blocks use stays whole).
// A unit's parameters are gathered before the block's forward and before its backward and freed
// after each, with the next block's gather issued ahead in both directions.
#pragma once

#include "cohort/ddp/distributed_data_parallel.hpp"
#include "cohort/pipeline/stage.hpp"

namespace cohort::train {

// The stage's block hooks driving `ddp`'s acquire/prefetch/release. Both must outlive the
// stage's use.
void connect_zero3(pipeline::Stage& stage, ddp::DistributedDataParallel& ddp);

}  // namespace cohort::train
