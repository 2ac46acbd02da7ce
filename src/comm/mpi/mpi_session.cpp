#include "cohort/comm/mpi_session.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <set>

#include "mpi_check.hpp"

namespace cohort::comm {

struct MpiSession::Impl {
  bool owns_mpi = false;
  MPI_Comm world = MPI_COMM_NULL;  // Cohort's duplicate of MPI_COMM_WORLD
  MPI_Comm node = MPI_COMM_NULL;   // ranks sharing memory with this one
  int rank = 0;
  int size = 1;
  int node_rank = 0;
  int node_size = 1;
};

MpiSession::MpiSession(int* argc, char*** argv) : impl_(std::make_unique<Impl>()) {
  int initialized = 0;
  COHORT_MPI_CHECK(MPI_Initialized(&initialized));
  if (!initialized) {
    int provided = MPI_THREAD_SINGLE;
    COHORT_MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided));
    impl_->owns_mpi = true;
    if (provided < MPI_THREAD_MULTIPLE) {
      MPI_Finalize();
      COHORT_THROW(CommError,
                   "MPI_Init_thread: MPI_THREAD_MULTIPLE was asked for but the MPI "
                   "library provides only level ",
                   provided);
    }
  }
  COHORT_MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  COHORT_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &impl_->world));
  COHORT_MPI_CHECK(MPI_Comm_set_errhandler(impl_->world, MPI_ERRORS_RETURN));
  COHORT_MPI_CHECK(MPI_Comm_rank(impl_->world, &impl_->rank));
  COHORT_MPI_CHECK(MPI_Comm_size(impl_->world, &impl_->size));
  COHORT_MPI_CHECK(MPI_Comm_split_type(impl_->world, MPI_COMM_TYPE_SHARED, impl_->rank,
                                       MPI_INFO_NULL, &impl_->node));
  COHORT_MPI_CHECK(MPI_Comm_set_errhandler(impl_->node, MPI_ERRORS_RETURN));
  COHORT_MPI_CHECK(MPI_Comm_rank(impl_->node, &impl_->node_rank));
  COHORT_MPI_CHECK(MPI_Comm_size(impl_->node, &impl_->node_size));
}

MpiSession::~MpiSession() {
  // Destructors never throw: return codes are ignored here on purpose, MPI is going away.
  if (impl_->node != MPI_COMM_NULL) MPI_Comm_free(&impl_->node);
  if (impl_->world != MPI_COMM_NULL) MPI_Comm_free(&impl_->world);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (impl_->owns_mpi && !finalized) MPI_Finalize();
}

int MpiSession::rank() const { return impl_->rank; }
int MpiSession::size() const { return impl_->size; }
int MpiSession::node_rank() const { return impl_->node_rank; }
int MpiSession::node_size() const { return impl_->node_size; }

void MpiSession::barrier() const { COHORT_MPI_CHECK(MPI_Barrier(impl_->world)); }

NodeLayout MpiSession::verify(env::Topology& t) const {
  COHORT_CHECK(t.rank == impl_->rank && t.world_size == impl_->size, EnvironmentError,
               "launcher says rank ", t.rank, " of ", t.world_size, " but MPI says rank ",
               impl_->rank, " of ", impl_->size);
  // Per rank: launcher node index, launcher local rank, and the world rank of its host's leader.
  int leader = impl_->rank;
  COHORT_MPI_CHECK(MPI_Bcast(&leader, 1, MPI_INT, 0, impl_->node));
  const std::array<int, 3> mine{t.node_index, t.local_rank, leader};
  std::vector<int> all(3 * static_cast<size_t>(impl_->size));
  COHORT_MPI_CHECK(MPI_Allgather(mine.data(), 3, MPI_INT, all.data(), 3, MPI_INT, impl_->world));

  std::vector<int> leaders;  // distinct hosts in order of first appearance
  for (int r = 0; r < impl_->size; ++r) {
    const int l = all[3 * r + 2];
    if (std::find(leaders.begin(), leaders.end(), l) == leaders.end()) leaders.push_back(l);
  }
  if (t.node_index < 0) {  // the launcher did not say: one node per shared-memory host
    t.node_index =
        static_cast<int>(std::find(leaders.begin(), leaders.end(), leader) - leaders.begin());
    t.node_count = static_cast<int>(leaders.size());
    for (int r = 0; r < impl_->size; ++r) {
      all[3 * r] = static_cast<int>(std::find(leaders.begin(), leaders.end(), all[3 * r + 2]) -
                                    leaders.begin());
    }
  }
  std::map<int, std::set<int>> local_ranks;  // launcher node -> its local ranks
  std::map<int, std::set<int>> node_hosts;   // launcher node -> hosts its ranks run on
  std::map<int, std::set<int>> host_nodes;   // host -> launcher nodes on it
  for (int r = 0; r < impl_->size; ++r) {
    const int node = all[3 * r];
    COHORT_CHECK(local_ranks[node].insert(all[3 * r + 1]).second, EnvironmentError,
                 "launcher gives local rank ", all[3 * r + 1], " twice on node ", node);
    node_hosts[node].insert(all[3 * r + 2]);
    host_nodes[all[3 * r + 2]].insert(node);
  }
  const auto& my_locals = local_ranks[t.node_index];
  COHORT_CHECK(
      static_cast<int>(my_locals.size()) == t.local_size && *my_locals.rbegin() == t.local_size - 1,
      EnvironmentError, "launcher says node ", t.node_index, " has ", t.local_size, " ranks but ",
      my_locals.size(), " ranks report local ranks on it");
  COHORT_CHECK(node_hosts[t.node_index].size() == 1, EnvironmentError, "launcher node ",
               t.node_index, " spans ", node_hosts[t.node_index].size(),
               " shared-memory hosts according to MPI_Comm_split_type");
  NodeLayout layout;
  layout.node_index = t.node_index;
  layout.node_count = t.node_count;
  layout.hosts = static_cast<int>(leaders.size());
  for (const auto& entry : host_nodes) {
    layout.launcher_nodes_per_host =
        std::max(layout.launcher_nodes_per_host, static_cast<int>(entry.second.size()));
  }
  return layout;
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
