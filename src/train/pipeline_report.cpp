// The pipelined run's closing record (Parallelism::pipeline_report, train/parallelism.hpp): the
// schedule's figures per rank, and the checksum of each rank's copy of the shared parameters.
#include <ATen/ops/zeros.h>

#include "cohort/io/checksum.hpp"
#include "cohort/pipeline/schedule.hpp"
#include "cohort/settings/config.hpp"
#include "train/parallelism.hpp"

namespace cohort::train {

// The copies get the same summed gradient and the same update on every stage that holds them
// (reduce_shared_gradients), so their bytes stay equal: a checksum that differs between the
// first and last stage of one replica is a tied embedding that came apart.
std::uint64_t Parallelism::shared_copies_hash() {
  if (shared_parameters_.empty()) return 0;
  io::StreamingChecksum checksum;
  const auto add = [&checksum](const at::Tensor& t) {
    const at::Tensor bytes = t.detach().to(c10::kCPU).contiguous();
    checksum.add(bytes.data_ptr(), bytes.nbytes());
  };
  if (sharded()) {
    for (const auto& piece : pieces_of(shared_parameters_)) add(piece.value);
  } else {
    for (const auto& p : shared_parameters_) add(p);
  }
  return io::parse_checksum(checksum.result());
}

nlohmann::json Parallelism::pipeline_report(comm::Communicator& control) {
  const int world = control.size();
  constexpr int kFields = 6;
  at::Tensor mine = at::zeros({kFields}, at::kDouble);
  mine[0] = totals_.peak_in_flight;
  mine[1] = static_cast<double>(totals_.peak_activation_bytes);
  mine[2] = totals_.compute_s;
  mine[3] = totals_.wait_s;
  mine[4] = totals_.step_s;
  mine[5] = static_cast<double>(totals_.peak_memory_growth);
  // A 64-bit hash does not survive a double: its own gather, as integers.
  at::Tensor hash = at::zeros({1}, at::kLong);
  hash[0] = static_cast<std::int64_t>(shared_copies_hash());
  at::Tensor all, hashes;  // rank 0's: it writes the record
  if (control.rank() == 0) {
    all = at::zeros({kFields * world}, at::kDouble);
    hashes = at::zeros({world}, at::kLong);
  }
  control.gather(all, mine, 0);
  control.gather(hashes, hash, 0);
  if (control.rank() != 0) return nlohmann::json::object();
  nlohmann::json ranks = nlohmann::json::array();
  const auto* v = all.data_ptr<double>();
  const auto* h = hashes.data_ptr<std::int64_t>();
  for (int r = 0; r < world; ++r) {
    const double* x = v + kFields * r;
    const auto coords = layout_.coords(r);
    nlohmann::json shared;  // null: the rank holds no shared copy
    if (h[r] != 0) shared = io::format_checksum(static_cast<std::uint64_t>(h[r]));
    ranks.push_back({{"rank", r},
                     {"stage", coords.stage},
                     {"data", coords.data},
                     {"tensor", coords.tensor},
                     {"peak_in_flight", static_cast<int>(x[0])},
                     {"peak_activation_bytes", static_cast<std::int64_t>(x[1])},
                     {"peak_memory_growth_bytes", static_cast<std::int64_t>(x[5])},
                     {"compute_s", x[2]},
                     {"wait_s", x[3]},
                     {"busy_fraction", x[4] > 0 ? x[2] / x[4] : 0.0},
                     {"shared_checksum", shared}});
  }
  return {{"event", "pipeline"},
          {"schedule", to_string(options_.schedule)},
          {"stages", layout_.stages()},
          {"micro_batches", micro_batches_},
          {"steps", steps_},
          {"bubble_theory", pipeline::bubble_fraction_theory(layout_.stages(), micro_batches_)},
          {"ranks", ranks}};
}

}  // namespace cohort::train
