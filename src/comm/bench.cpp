#include "cohort/comm/bench.hpp"

#include <ATen/ops/ones.h>
#include <mpi.h>
#include <torch/cuda.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>

#include "common/stats.hpp"
#include "mpi/mpi_check.hpp"
#include "mpi/mpi_session_impl.hpp"

namespace cohort::comm {
namespace {

using Clock = std::chrono::steady_clock;

using stats::median;

template <typename F>
double time_ms(F&& f) {
  const auto start = Clock::now();
  f();
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// Same number of iterations on every rank: rank 0 decides from its warm-up timing.
int agree_iterations(MPI_Comm comm, double warm_ms, double seconds) {
  int n = std::clamp(static_cast<int>(seconds * 1000 / 3 / std::max(warm_ms, 1e-3)), 5, 200);
  COHORT_MPI_CHECK(MPI_Bcast(&n, 1, MPI_INT, 0, comm));
  return n;
}

}  // namespace

RawAllreduce::RawAllreduce(const MpiSession& session, std::int64_t numel)
    : session_(session), buffer_(at::ones({numel})) {}

double RawAllreduce::run_ms() {
  MPI_Comm raw = session_impl(session_).world;
  COHORT_MPI_CHECK(MPI_Barrier(raw));
  const double ms = time_ms([&] {
    COHORT_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, buffer_.data_ptr(),
                                   static_cast<int>(buffer_.numel()), MPI_FLOAT, MPI_SUM, raw));
  });
  buffer_.fill_(1.0f);
  return ms;
}

std::vector<AllreduceBenchRow> bench_allreduce(Communicator& comm, const MpiSession& session,
                                               const AllreduceBenchOptions& options) {
  MPI_Comm raw = session_impl(session).world;
  std::vector<AllreduceBenchRow> rows;
  for (std::size_t bytes = options.min_bytes; bytes <= options.max_bytes; bytes *= 4) {
    const auto n = static_cast<int64_t>(bytes / sizeof(float));
    at::Tensor buffer = at::ones({n}, at::TensorOptions().device(options.device));
    at::Tensor host = buffer.is_cuda() ? at::ones({n}) : buffer;  // the baseline's buffer
    float* data = host.data_ptr<float>();
    // A timing of Cohort's ends when the device is done too: on a GPU the host waits for it.
    const auto settle = [&] {
      if (buffer.is_cuda()) torch::cuda::synchronize(buffer.device().index());
    };
    const auto all_reduce = [&] {
      comm.all_reduce(buffer);
      settle();
    };
    // Warm-up: both paths, also to settle page mappings.
    for (int i = 0; i < 2; ++i) {
      all_reduce();
      COHORT_MPI_CHECK(
          MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(n), MPI_FLOAT, MPI_SUM, raw));
    }
    comm.barrier();
    const double warm = time_ms(all_reduce);
    const int iterations = agree_iterations(raw, warm, options.seconds_per_size);
    std::vector<double> ours, ours_async, theirs;
    for (int i = 0; i < iterations; ++i) {
      // Alternate which goes first, so that neither always follows the barrier directly.
      auto run_raw = [&] {
        COHORT_MPI_CHECK(MPI_Barrier(raw));
        theirs.push_back(time_ms([&] {
          COHORT_MPI_CHECK(
              MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(n), MPI_FLOAT, MPI_SUM, raw));
        }));
      };
      auto run_ours = [&] {
        COHORT_MPI_CHECK(MPI_Barrier(raw));
        ours.push_back(time_ms(all_reduce));
      };
      if (i % 2 == 0) {
        run_raw();
        run_ours();
      } else {
        run_ours();
        run_raw();
      }
      COHORT_MPI_CHECK(MPI_Barrier(raw));
      ours_async.push_back(time_ms([&] {
        comm.all_reduce_async(buffer)->wait();
        settle();
      }));
      buffer.fill_(1.0f);  // keep the values finite
      host.fill_(1.0f);
    }
    AllreduceBenchRow row;
    row.bytes = bytes;
    row.iterations = iterations;
    row.cohort_ms = median(ours);
    row.cohort_async_ms = median(ours_async);
    row.raw_ms = median(theirs);
    row.algbw_gbs = bytes / (row.cohort_ms * 1e-3) / 1e9;
    row.busbw_gbs = row.algbw_gbs * 2.0 * (comm.size() - 1) / comm.size();
    row.ratio = row.raw_ms / row.cohort_ms;
    rows.push_back(row);
  }
  return rows;
}

nlohmann::json to_json(const std::vector<AllreduceBenchRow>& rows, int ranks,
                       const std::string& backend, const char* malloc_tuning) {
  using nlohmann::json;
  json out = {{"ranks", ranks},
              {"backend", backend},
              {"malloc_tuning", malloc_tuning},
              {"rows", json::array()}};
  for (const auto& r : rows) {
    out["rows"].push_back({{"bytes", r.bytes},
                           {"iterations", r.iterations},
                           {"cohort_ms", r.cohort_ms},
                           {"cohort_async_ms", r.cohort_async_ms},
                           {"raw_mpi_ms", r.raw_ms},
                           {"algbw_gbs", r.algbw_gbs},
                           {"busbw_gbs", r.busbw_gbs},
                           {"ratio_vs_raw", r.ratio}});
  }
  return out;
}

}  // namespace cohort::comm
