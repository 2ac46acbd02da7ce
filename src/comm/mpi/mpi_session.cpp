#include "cohort/comm/mpi_session.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>

#include "cohort/comm/allocator.hpp"
#include "cohort/env/environment.hpp"
#include "cohort/env/step_marker.hpp"
#include "cohort/error.hpp"
#include "mpi_check.hpp"
#include "mpi_session_impl.hpp"

namespace cohort::comm {
namespace {

// Processes joined by a rendezvous are separate MPI jobs, which MPI_Comm_split_type(SHARED) keeps
// apart even on one host: group them by host name instead.
MPI_Comm split_by_host(MPI_Comm world, int rank, int size) {
  constexpr int kName = 256;
  std::array<char, kName> mine{};
  ::gethostname(mine.data(), kName - 1);
  std::vector<char> all(static_cast<std::size_t>(size) * kName);
  COHORT_MPI_CHECK(MPI_Allgather(mine.data(), kName, MPI_CHAR, all.data(), kName, MPI_CHAR, world));
  int color = rank;
  for (int r = 0; r < size; ++r) {
    if (std::strncmp(&all[static_cast<std::size_t>(r) * kName], mine.data(), kName) == 0) {
      color = r;  // the first rank on this host names the group
      break;
    }
  }
  MPI_Comm node = MPI_COMM_NULL;
  COHORT_MPI_CHECK(MPI_Comm_split(world, color, rank, &node));
  return node;
}

// Ends the process with the watchdog's code (76) when MPI's start-up is not done within `limit`.
// MPI_Init_thread, the world's duplicate and the node split are collectives over every rank: a
// peer that never starts (or dies first) leaves this rank waiting in them forever, before any
// communicator or its watchdog exists. MPI_Abort needs the start-up that did not finish, so the
// process only says why and ends; the launcher then ends the others (mpirun, srun
// --kill-on-bad-exit and cohort supervise all do).
class StartupGuard {
 public:
  StartupGuard(std::chrono::seconds limit, int rank) {
    if (limit.count() <= 0) return;
    thread_ = std::thread([this, limit, rank] {
      std::unique_lock<std::mutex> lock(mutex_);
      if (wake_.wait_for(lock, limit, [this] { return done_; })) return;
      const std::string line = "cohort: watchdog: rank " + std::to_string(rank) +
                               ": MPI start-up not done after " + std::to_string(limit.count()) +
                               " s (parallel.timeout_s): a peer rank never joined (it did not "
                               "start, died first, or was started by another launch)\n";
      std::fputs(line.c_str(), stderr);
      std::fflush(stderr);
      std::_Exit(static_cast<int>(ExitCode::kWatchdog));
    });
  }
  ~StartupGuard() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  StartupGuard(const StartupGuard&) = delete;
  StartupGuard& operator=(const StartupGuard&) = delete;

 private:
  std::mutex mutex_;
  std::condition_variable wake_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace

MpiSession::MpiSession(int* argc, char*** argv, std::chrono::seconds ready_within)
    : impl_(std::make_unique<Impl>()) {
  const auto topology = env::detect(env::Environment::from_process());
  const StartupGuard guard(ready_within, topology.rank);
  tune_allocator();  // before MPI and torch allocate their large buffers
  int initialized = 0;
  COHORT_MPI_CHECK(MPI_Initialized(&initialized));
  if (!initialized && Rendezvous::needed(topology)) {
    impl_->rendezvous = std::make_unique<Rendezvous>(topology);
    impl_->rendezvous->prepare();
  }
  if (!initialized) {
    int provided = MPI_THREAD_SINGLE;
    COHORT_MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided));
    impl_->owns_mpi = true;
    if (provided < MPI_THREAD_MULTIPLE) {  // ~Impl finalizes
      COHORT_THROW(CommError,
                   "MPI_Init_thread: MPI_THREAD_MULTIPLE was asked for but the MPI "
                   "library provides only level ",
                   provided);
    }
  }
  COHORT_MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  // MPI 4 raises errors bound to no communicator (Open MPI 5: a peer process that died, reported
  // by PMIx) on MPI_COMM_SELF, whose handler is fatal by default: the survivor would abort with
  // MPI_ERR_UNKNOWN (exit 14) instead of failing its next operation as a lost peer (exit 77).
  COHORT_MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
  if (impl_->rendezvous) {
    impl_->world = impl_->rendezvous->join();
  } else {
    COHORT_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &impl_->world));
  }
  COHORT_MPI_CHECK(MPI_Comm_set_errhandler(impl_->world, MPI_ERRORS_RETURN));
  COHORT_MPI_CHECK(MPI_Comm_rank(impl_->world, &impl_->rank));
  COHORT_MPI_CHECK(MPI_Comm_size(impl_->world, &impl_->size));
  if (impl_->rendezvous) {
    impl_->node = split_by_host(impl_->world, impl_->rank, impl_->size);
  } else {
    COHORT_MPI_CHECK(MPI_Comm_split_type(impl_->world, MPI_COMM_TYPE_SHARED, impl_->rank,
                                         MPI_INFO_NULL, &impl_->node));
  }
  COHORT_MPI_CHECK(MPI_Comm_set_errhandler(impl_->node, MPI_ERRORS_RETURN));
  COHORT_MPI_CHECK(MPI_Comm_rank(impl_->node, &impl_->node_rank));
  COHORT_MPI_CHECK(MPI_Comm_size(impl_->node, &impl_->node_size));
}

MpiSession::~MpiSession() = default;  // ~Impl releases

int MpiSession::rank() const { return impl_->rank; }
int MpiSession::size() const { return impl_->size; }
int MpiSession::node_rank() const { return impl_->node_rank; }
int MpiSession::node_size() const { return impl_->node_size; }

void MpiSession::barrier() const { COHORT_MPI_CHECK(MPI_Barrier(impl_->world)); }

double MpiSession::loopback_seconds(std::size_t bytes, int repeats) const {
  std::vector<char> out(bytes, 1), in(bytes);
  const int count = static_cast<int>(std::min<std::size_t>(bytes, 1u << 30));
  const double start = MPI_Wtime();
  for (int i = 0; i < repeats; ++i) {
    COHORT_MPI_CHECK(MPI_Sendrecv(out.data(), count, MPI_CHAR, 0, 0, in.data(), count, MPI_CHAR, 0,
                                  0, MPI_COMM_SELF, MPI_STATUS_IGNORE));
  }
  return (MPI_Wtime() - start) / std::max(1, repeats);
}

void MpiSession::abort(int code) const {
  std::fflush(nullptr);
  env::mark_step_failed(code);  // a supervised step ends now (env/step_marker.hpp)
  MPI_Abort(impl_->world, code);
  std::_Exit(code);  // MPI_Abort does not return; should it, this process still ends with `code`
}

namespace {

// One row per rank of what its launcher said, plus MPI's host leader.
struct RankView {
  int rank, world_size, node_index, local_rank, local_size, leader;
};

// Every rank runs the same checks over the same gathered table, so all fail or pass together.
NodeLayout check_views(std::vector<RankView>& views, int world_size) {
  // Distinct shared-memory hosts in order of first appearance, indexed by a map: a linear search
  // per rank was O(R x hosts), 4e8 steps at 40,000 ranks on 10,000 nodes.
  std::map<int, int> leaders;
  for (const auto& v : views) leaders.emplace(v.leader, static_cast<int>(leaders.size()));
  std::map<int, std::set<int>> local_ranks, node_hosts, host_nodes;
  for (int r = 0; r < world_size; ++r) {
    auto& v = views[static_cast<size_t>(r)];
    COHORT_CHECK(v.rank == r && v.world_size == world_size, EnvironmentError, "launcher says rank ",
                 v.rank, " of ", v.world_size, " but MPI says rank ", r, " of ", world_size);
    if (v.node_index < 0) v.node_index = leaders.at(v.leader);  // launcher did not say
    COHORT_CHECK(local_ranks[v.node_index].insert(v.local_rank).second, EnvironmentError,
                 "launcher gives local rank ", v.local_rank, " twice on node ", v.node_index);
    node_hosts[v.node_index].insert(v.leader);
    host_nodes[v.leader].insert(v.node_index);
  }
  NodeLayout layout;
  for (const auto& v : views) {
    const auto& locals = local_ranks[v.node_index];
    COHORT_CHECK(
        static_cast<int>(locals.size()) == v.local_size && *locals.rbegin() == v.local_size - 1,
        EnvironmentError, "launcher says node ", v.node_index, " has ", v.local_size, " ranks but ",
        locals.size(), " ranks report local ranks 0..", *locals.rbegin(), " on it");
    COHORT_CHECK(node_hosts[v.node_index].size() == 1, EnvironmentError, "launcher node ",
                 v.node_index, " spans ", node_hosts[v.node_index].size(),
                 " shared-memory hosts according to MPI_Comm_split_type");
  }
  layout.node_count = static_cast<int>(local_ranks.size());
  layout.hosts = static_cast<int>(leaders.size());
  for (const auto& entry : host_nodes) {
    layout.launcher_nodes_per_host =
        std::max(layout.launcher_nodes_per_host, static_cast<int>(entry.second.size()));
  }
  return layout;
}

}  // namespace

NodeLayout MpiSession::verify(env::Topology& t) const {
  int leader = impl_->rank;
  COHORT_MPI_CHECK(MPI_Bcast(&leader, 1, MPI_INT, 0, impl_->node));
  const RankView mine{t.rank, t.world_size, t.node_index, t.local_rank, t.local_size, leader};
  std::vector<RankView> views(static_cast<size_t>(impl_->size));
  constexpr int kInts = sizeof(RankView) / sizeof(int);
  COHORT_MPI_CHECK(
      MPI_Allgather(&mine, kInts, MPI_INT, views.data(), kInts, MPI_INT, impl_->world));
  NodeLayout layout = check_views(views, impl_->size);
  const bool inferred = t.node_index < 0;
  t.node_index = views[static_cast<size_t>(impl_->rank)].node_index;
  if (inferred) t.node_count = layout.node_count;
  layout.node_index = t.node_index;
  layout.node_count = t.node_count;
  return layout;
}

nlohmann::json to_json(const NodeLayout& layout) {
  return {{"hosts", layout.hosts}, {"launcher_nodes_per_host", layout.launcher_nodes_per_host}};
}

std::vector<std::string> MpiSession::gather_to_root(const std::string& mine) const {
  const int length = static_cast<int>(mine.size());
  std::vector<int> lengths(impl_->rank == 0 ? static_cast<size_t>(impl_->size) : 0);
  COHORT_MPI_CHECK(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, impl_->world));
  std::vector<int> offsets(lengths.size(), 0);
  for (size_t i = 1; i < lengths.size(); ++i) offsets[i] = offsets[i - 1] + lengths[i - 1];
  std::string joined(lengths.empty() ? 0 : static_cast<size_t>(offsets.back() + lengths.back()),
                     '\0');
  COHORT_MPI_CHECK(MPI_Gatherv(mine.data(), length, MPI_CHAR, joined.data(), lengths.data(),
                               offsets.data(), MPI_CHAR, 0, impl_->world));
  std::vector<std::string> result;
  for (size_t i = 0; i < lengths.size(); ++i)
    result.push_back(joined.substr(offsets[i], lengths[i]));
  return result;
}

std::string MpiSession::library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  COHORT_MPI_CHECK(MPI_Get_library_version(text, &length));
  std::string version(text, static_cast<size_t>(length));
  const auto comma = version.find(',');
  return comma == std::string::npos ? version : version.substr(0, comma);
}

}  // namespace cohort::comm
