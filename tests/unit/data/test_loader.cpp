#include <ATen/core/Tensor.h>

#include <boost/test/unit_test.hpp>

#include "cohort/data/loader.hpp"
#include "cohort/error.hpp"
#include "data_fixture.hpp"

using cohort::data::DataLoader;
using cohort::data::LoaderOptions;
using cohort::data::LoaderState;
using cohort::test::make_rows;

namespace {

// Each batch as the list of sample ids it holds (input value = sample id).
using Sequence = std::vector<std::vector<int>>;

std::vector<int> ids(const cohort::data::Batch& batch) {
  std::vector<int> out;
  const auto numel = batch.inputs.numel() / batch.inputs.size(0);
  for (std::int64_t i = 0; i < batch.inputs.size(0); ++i) {
    out.push_back(static_cast<int>(batch.inputs.data_ptr<float>()[i * numel]));
  }
  return out;
}

LoaderOptions options(const std::string& path, int prefetch, int rank = 0, int world = 1) {
  LoaderOptions o;
  o.path = path;
  o.batch_size = 4;
  o.rank = rank;
  o.world = world;
  o.seed = 42;
  o.prefetch = prefetch;
  o.reader.normalize = false;
  return o;
}

// Up to `limit` batches, passing epoch ends (recorded as an empty entry).
Sequence take(DataLoader& loader, int limit) {
  Sequence out;
  while (static_cast<int>(out.size()) < limit) {
    auto batch = loader.next();
    out.push_back(batch ? ids(*batch) : std::vector<int>{});
  }
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(data_loader)

BOOST_AUTO_TEST_CASE(prefetching_changes_nothing_but_the_timing) {
  cohort::test::ScratchDir dir;
  const auto path = make_rows(dir.file("d.h5"), 0, 30);
  DataLoader sync(options(path, 0)), ahead(options(path, 3));
  BOOST_TEST(sync.batches_per_epoch() == 7);  // 30 samples, batch 4, the last partial one dropped
  const auto a = take(sync, 24), b = take(ahead, 24);
  BOOST_TEST((a == b));
  BOOST_TEST(a[7].empty());    // epoch end after 7 batches
  BOOST_TEST((a[0] != a[8]));  // a new permutation in epoch 1
  BOOST_TEST(ahead.wait().batches == 21);
  BOOST_TEST(ahead.state().epoch == 3);
  BOOST_TEST(ahead.state().batch == 0);
}

BOOST_AUTO_TEST_CASE(resuming_mid_epoch_yields_exactly_what_the_uninterrupted_run_would) {
  cohort::test::ScratchDir dir;
  const auto path = make_rows(dir.file("d.h5"), 0, 30);
  DataLoader whole(options(path, 2));
  const auto expected = take(whole, 20);
  for (int cut : {0, 3, 7, 8, 12}) {  // mid-epoch, at the end of one, at the start of the next
    LoaderState saved;
    Sequence got;
    {
      DataLoader first(options(path, 2));
      got = take(first, cut);
      saved = first.state();  // its prefetched batches are thrown away with it
    }
    DataLoader resumed(options(path, 2));
    resumed.restore(saved);
    const auto rest = take(resumed, 20 - cut);
    got.insert(got.end(), rest.begin(), rest.end());
    BOOST_TEST((got == expected), "resume after " << cut << " batches");
  }
}

BOOST_AUTO_TEST_CASE(ranks_split_each_epoch_between_them) {
  cohort::test::ScratchDir dir;
  const auto path = make_rows(dir.file("d.h5"), 0, 32);
  std::vector<int> seen;
  for (int rank = 0; rank < 2; ++rank) {
    DataLoader loader(options(path, 1, rank, 2));
    while (auto batch = loader.next()) {
      const auto got = ids(*batch);
      seen.insert(seen.end(), got.begin(), got.end());
    }
  }
  std::sort(seen.begin(), seen.end());
  std::vector<int> all(32);
  for (int i = 0; i < 32; ++i) all[i] = i;
  BOOST_TEST(seen == all, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(an_error_in_the_prefetch_thread_reaches_next) {
  cohort::test::ScratchDir dir;
  auto o = options(make_rows(dir.file("flat.h5"), 0, 20, {5}), 2);
  o.reader.augment.horizontal_flip = true;  // not an image: the reader refuses, in the thread
  DataLoader loader(o);
  BOOST_CHECK_THROW(loader.next(), cohort::UsageError);
}

BOOST_AUTO_TEST_CASE(several_workers_yield_the_batches_of_one_in_order) {
  cohort::test::ScratchDir dir;
  const auto path = make_rows(dir.file("d.h5"), 0, 30);
  DataLoader one(options(path, 2));
  const auto expected = take(one, 24);
  for (int workers : {2, 3, 5}) {
    auto o = options(path, 2);
    o.workers = workers;
    DataLoader many(o);
    BOOST_TEST((take(many, 24) == expected), workers << " workers");
    // Resumed mid-epoch (the workers restart at the restored batch).
    DataLoader resumed(o);
    resumed.restore(LoaderState{1, 3});
    BOOST_TEST((take(resumed, 12) == Sequence(expected.begin() + 11, expected.begin() + 23)),
               workers << " workers, resumed");
  }
  // An error in one of several workers still reaches next().
  auto bad = options(make_rows(dir.file("flat.h5"), 0, 20, {5}), 2);
  bad.reader.augment.horizontal_flip = true;
  bad.workers = 3;
  DataLoader failing(bad);
  BOOST_CHECK_THROW(failing.next(), cohort::UsageError);
}

BOOST_AUTO_TEST_CASE(a_waiting_caller_reads_batches_itself_and_changes_nothing_but_who) {
  cohort::test::ScratchDir dir;
  const auto path = make_rows(dir.file("d.h5"), 0, 30);
  DataLoader one(options(path, 0));
  const auto expected = take(one, 24);
  for (int workers : {1, 2}) {
    for (bool caller_reads : {true, false}) {
      auto o = options(path, 2);
      o.workers = workers;
      o.caller_reads = caller_reads;
      o.read_delay_ms = 5;  // reads slower than this consumer: it always waits
      DataLoader loader(o);
      BOOST_TEST((take(loader, 24) == expected), workers << " workers, caller " << caller_reads);
      // Which thread read which batch is a race; that the waiting caller read some is not (it
      // waits for every batch, and most of those times the window holds one no thread began).
      BOOST_TEST((loader.wait().own_reads > 0) == caller_reads);
      DataLoader resumed(o);
      resumed.restore(LoaderState{1, 3});
      BOOST_TEST((take(resumed, 12) == Sequence(expected.begin() + 11, expected.begin() + 23)));
    }
  }
}

BOOST_AUTO_TEST_CASE(a_resume_point_outside_the_epoch_is_refused) {
  cohort::test::ScratchDir dir;
  DataLoader loader(options(make_rows(dir.file("d.h5"), 0, 30), 2));
  BOOST_CHECK_THROW(loader.restore(LoaderState{0, 8}), cohort::ConfigError);
}

BOOST_AUTO_TEST_SUITE_END()
