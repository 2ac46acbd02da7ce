// The data module under mpirun: the MPI-IO (collective) driver reads what the POSIX driver reads,
// across shard boundaries and with ranks whose batches miss whole shards; the ranks' batches
// together cover each epoch.
#include <ATen/core/Tensor.h>

#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <sstream>

#include "../../unit/data/data_fixture.hpp"
#include "cohort/data/loader.hpp"
#include "cohort/data/writer.hpp"
#include "mpi_fixture.hpp"

namespace {

using cohort::data::DataLoader;
using cohort::data::IoDriver;
using cohort::data::LoaderOptions;

// A dataset every rank can see: rank 0 writes it, the others wait.
std::string shared_dataset(const std::string& name, bool sharded) {
  const auto& session = cohort::test::session();
  const auto dir = std::filesystem::temp_directory_path() / "cohort-data-mpi-test";
  const auto path = (dir / name).string();
  if (session.rank() == 0) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(sharded ? path : dir.string());
    if (sharded) {
      cohort::test::make_rows(path + "/a.h5", 0, 25, {6});
      cohort::test::make_rows(path + "/b.h5", 25, 3, {6});
      cohort::test::make_rows(path + "/c.h5", 28, 40, {6});
    } else {
      cohort::test::make_rows(path, 0, 67, {6});
    }
  }
  session.barrier();
  return path;
}

std::string read_all(const std::string& path, IoDriver driver, int epochs) {
  const auto& session = cohort::test::session();
  LoaderOptions o;
  o.path = path;
  o.batch_size = 5;
  o.rank = session.rank();
  o.world = session.size();
  o.seed = 9;
  o.prefetch = 2;
  o.reader.driver = driver;
  o.reader.session = &session;
  o.reader.normalize = false;
  DataLoader loader(o);
  std::ostringstream out;
  for (int e = 0; e < epochs; ++e) {
    while (auto batch = loader.next()) {
      for (std::int64_t i = 0; i < batch->inputs.size(0); ++i) {
        out << batch->inputs.select(0, i).data_ptr<float>()[0] << ' ';
      }
      out << "| ";
    }
    out << "\n";
  }
  return out.str();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(data_mpi)

BOOST_AUTO_TEST_CASE(mpio_collective_reads_equal_posix_reads) {
  for (bool sharded : {false, true}) {
    const auto path = shared_dataset(sharded ? "sharded" : "single.h5", sharded);
    const auto posix = read_all(path, IoDriver::kPosix, 2);
    const auto mpio = read_all(path, IoDriver::kMpiIo, 2);
    BOOST_TEST(posix == mpio, (sharded ? "sharded" : "single file"));
    BOOST_TEST(posix.size() > 40u);
  }
}

BOOST_AUTO_TEST_CASE(the_ranks_batches_cover_the_epoch) {
  const auto& session = cohort::test::session();
  const auto path = shared_dataset("cover.h5", false);
  const auto gathered = session.gather_to_root(read_all(path, IoDriver::kPosix, 1));
  if (session.rank() != 0) return;
  std::vector<int> seen;
  for (const auto& text : gathered) {
    std::istringstream in(text);
    std::string token;
    while (in >> token) {
      if (token != "|") seen.push_back(std::stoi(token));
    }
  }
  // Expected: each rank's sampler slice, cut to whole batches of 5, over all ranks.
  std::vector<int> expected;
  for (int rank = 0; rank < session.size(); ++rank) {
    const cohort::data::DistributedSampler sampler({67, rank, session.size(), 9, true, false});
    const auto order = sampler.indices(0);
    const auto used = sampler.num_samples() / 5 * 5;
    expected.insert(expected.end(), order.begin(), order.begin() + used);
  }
  std::sort(seen.begin(), seen.end());
  std::sort(expected.begin(), expected.end());
  BOOST_TEST(seen == expected, boost::test_tools::per_element());
  BOOST_TEST(seen.size() >= 67u - 5u * session.size());  // at most a partial batch per rank unseen
}

BOOST_AUTO_TEST_SUITE_END()
