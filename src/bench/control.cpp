#include "cohort/bench/control.hpp"

#include <ATen/ops/full.h>
#include <ATen/ops/zeros.h>
#include <unistd.h>

#include <filesystem>
#include <vector>

#include "bench/common.hpp"
#include "cohort/ckpt/checkpoint.hpp"
#include "cohort/comm/factory.hpp"
#include "cohort/env/system_info.hpp"
#include "cohort/error.hpp"
#include "cohort/io/files.hpp"
#include "cohort/monitor/summary.hpp"

namespace cohort::bench {

namespace {

// T small tensors of this rank's own (pipeline-like: no two ranks share a name).
ckpt::SaveRequest own_tensors(int rank, int tensors) {
  ckpt::SaveRequest request;
  request.step = 1;
  request.attempt = "bench";
  for (int t = 0; t < tensors; ++t) {
    request.tensors.emplace_back(
        "stage" + std::to_string(rank) + ".block" + std::to_string(t) + ".weight",
        at::full({4, 4}, static_cast<float>(rank + t)));
  }
  return request;
}

// The monitor's summary as a run makes it: the gather to rank 0, then share() as with
// monitor.http_port (every rank here is on one node, so the node gather spans them all).
void time_summaries(comm::Communicator& comm, int repeats, ControlBenchResult& r) {
  auto node = comm.split(0, comm.rank());
  monitor::MetricsAggregator aggregator(comm, r.ranks, {}, node.get());
  std::vector<double> summaries, shared;
  for (int i = 0; i < repeats; ++i) {
    aggregator.add({});
    summaries.push_back(timed(comm, [&] { aggregator.summarize({}, {}, {}); }));
    aggregator.add({});
    shared.push_back(timed(comm, [&] {
      auto s = aggregator.summarize({}, {}, {});
      std::uint32_t flags = 0;
      aggregator.share(s, flags);
    }));
  }
  r.summary_s = median(summaries);
  r.summary_shared_s = median(shared);
  r.summary_fields = monitor::kFields;
  r.summary_bytes = static_cast<std::int64_t>(r.ranks) * r.summary_fields * sizeof(double);
  r.summary_rank_bytes = 0;  // a gather sends the other ranks nothing
  r.summary_shared_rank_bytes = monitor::MetricsAggregator::shared_bytes();
}

}  // namespace

ControlBenchResult bench_control(const comm::MpiSession& session, env::Topology topology,
                                 const ControlBenchOptions& o) {
  ControlBenchResult r;
  const double startup = env::seconds_since_process_start();
  auto comm = comm::make_communicator(session, comm::Backend::kMpi, {});
  r.ranks = comm->size();
  r.startup_s = slowest(*comm, startup);
  r.verify_s = timed(*comm, [&] { session.verify(topology); });

  const auto request = own_tensors(comm->rank(), o.tensors);
  std::vector<double> plans, cached;
  ckpt::PlanCache cache;
  for (int i = 0; i < o.repeats; ++i) {
    plans.push_back(timed(*comm, [&] { ckpt::plan_checkpoint(request, *comm); }));
  }
  cache.plan(request, *comm);
  r.plan_bytes = cache.last_gather_bytes();
  for (int i = 0; i < o.repeats; ++i) {
    cached.push_back(timed(*comm, [&] { cache.plan(request, *comm); }));
  }
  r.plan_s = median(plans);
  r.plan_cached_s = median(cached);

  const std::string dir = shared_dir(*comm, o.dir, "control");
  std::string path;
  r.save_s = timed(*comm, [&] { path = ckpt::save_checkpoint(dir, request, *comm); });
  if (comm->rank() == 0) {
    r.manifest_bytes = io::file_bytes(path + "/manifest.json");
    std::filesystem::remove_all(dir);
  }

  time_summaries(*comm, o.repeats, r);
  return r;
}

}  // namespace cohort::bench
