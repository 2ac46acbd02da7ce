#include "cohort/data/loader.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <thread>
#include <variant>

#include "cohort/data/batch_plan.hpp"
#include "cohort/data/transform.hpp"
#include "cohort/error.hpp"
#include "common/splitmix.hpp"

namespace cohort::data {
namespace {

struct EndOfEpoch {
  std::int64_t epoch = 0;
};
using Item = std::variant<Batch, EndOfEpoch, std::exception_ptr>;

}  // namespace

struct DataLoader::Impl {
  LoaderOptions options;
  // readers[w]: worker w's own (HDF5 handles are not shared between threads); readers[0] also
  // serves next() when prefetch is 0.
  std::vector<std::unique_ptr<BatchReader>> readers;
  std::vector<std::unique_ptr<BatchTransform>> transforms;  // one per reader, when configured
  std::unique_ptr<DistributedSampler> sampler;
  std::int64_t batches = 0;
  LoaderState position;  // what next() yields next
  WaitStats wait;

  // Producer side, guarded by mutex.
  std::mutex mutex;
  std::condition_variable changed;
  std::map<std::int64_t, Item> ready;  // items read ahead, by their index since start()
  LoaderState started;                 // where the items' sequence begins
  bool stop = false;
  bool collective = false;         // MPI-IO: reads must match across ranks
  std::int64_t consumed = 0;       // items taken since the producer started
  std::int64_t drain_target = -1;  // collective halt: read up to this many items, then stop
  std::vector<std::thread> producers;

  // The indices of one batch (batch b of epoch e), computed from a cached epoch order.
  struct Order {
    std::int64_t epoch = -1;
    std::vector<std::int64_t> indices;
  };
  std::vector<std::int64_t> lengths;  // bucketing: per global sample
  std::vector<std::int64_t> batch_indices(Order& order, LoaderState at) const {
    if (order.epoch != at.epoch) {
      order.indices = sampler->indices(at.epoch);
      order.epoch = at.epoch;
      if (options.bucket > 0) bucket_by_length(order.indices, at.epoch);
    }
    const std::int64_t begin = at.batch * options.batch_size;
    const std::int64_t end =
        std::min<std::int64_t>(begin + options.batch_size, sampler->num_samples());
    return {order.indices.begin() + begin, order.indices.begin() + end};
  }

  void bucket_by_length(std::vector<std::int64_t>& indices, std::int64_t epoch) const {
    const auto size = static_cast<std::int64_t>(indices.size());
    const std::int64_t batch = options.batch_size;
    const std::int64_t window = options.bucket * batch;
    for (std::int64_t w = 0; w < size; w += window) {
      const auto begin = indices.begin() + w;
      const auto end = indices.begin() + std::min(size, w + window);
      std::stable_sort(begin, end, [this](std::int64_t a, std::int64_t b) {
        return lengths[static_cast<std::size_t>(a)] < lengths[static_cast<std::size_t>(b)];
      });
      // Shuffle the window's full batches (a final partial one stays last: it may be dropped).
      const std::int64_t full = (end - begin) / batch;
      std::uint64_t state = options.seed ^ (static_cast<std::uint64_t>(epoch) << 32) ^
                            static_cast<std::uint64_t>(w / window) * 0x9e3779b97f4a7c15ull;
      for (std::int64_t i = full - 1; i > 0; --i, state += 0x9e3779b97f4a7c15ull) {
        const auto j =
            static_cast<std::int64_t>(splitmix64(state) % static_cast<std::uint64_t>(i + 1));
        std::swap_ranges(begin + i * batch, begin + (i + 1) * batch, begin + j * batch);
      }
    }
  }

  // Item n of the sequence from `from`: each epoch is its batches, then its end.
  LoaderState position_of(LoaderState from, std::int64_t n) const {
    const std::int64_t first = batches - from.batch + 1;
    if (n < first) return {from.epoch, from.batch + n};
    n -= first;
    return {from.epoch + 1 + n / (batches + 1), n % (batches + 1)};
  }

  std::int64_t window() const {
    return std::max<std::int64_t>(options.prefetch, static_cast<std::int64_t>(readers.size()));
  }

  Item produce(std::size_t worker, Order& order, LoaderState at) {
    if (at.batch >= batches) return EndOfEpoch{at.epoch};
    auto indices = batch_indices(order, at);
    Batch batch = readers[worker]->read(indices, at.epoch);
    batch.indices = std::move(indices);
    if (!transforms.empty()) transforms[worker]->apply(batch, options.seed);
    if (options.read_delay_ms > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(options.read_delay_ms));
    }
    batch.index = at.batch;
    return batch;
  }

  // Worker w of K reads items w, w + K, w + 2K, ... of the sequence; each waits for room
  // before it reads, so that nothing is read more than window() items past what was consumed,
  // and next() takes the items in sequence order. With collective MPI-IO (one worker) every rank
  // must make the same reads: halt() then sets drain_target to consumed + prefetch, the same
  // number on every rank (they consume in lockstep), and the producer reads up to it before it
  // stops, instead of stopping wherever it happens to be (which left a peer blocked in a
  // collective read for ever).
  void run(std::size_t worker) {
    Order order;
    const auto workers = static_cast<std::int64_t>(readers.size());
    for (std::int64_t n = static_cast<std::int64_t>(worker);; n += workers) {
      {
        std::unique_lock<std::mutex> lock(mutex);
        changed.wait(lock, [&] { return stop || n < consumed + window(); });
        if (stop && (drain_target < 0 || n >= drain_target)) return;
      }
      Item item;
      try {
        item = produce(worker, order, position_of(started, n));
      } catch (...) {
        item = std::current_exception();  // handed to next(), which rethrows it
      }
      const bool failed = std::holds_alternative<std::exception_ptr>(item);
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (!stop) ready.emplace(n, std::move(item));
      }
      // Notified after unlocking: a woken next() then finds the mutex free instead of sleeping
      // again on it straight away.
      changed.notify_all();
      if (failed) return;
    }
  }

  void start() {
    if (options.prefetch > 0 && producers.empty()) {
      stop = false;
      drain_target = -1;
      consumed = 0;
      started = position;
      for (std::size_t w = 0; w < readers.size(); ++w)
        producers.emplace_back([this, w] { run(w); });
    }
  }

  void halt() noexcept {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stop = true;
      drain_target = collective ? consumed + options.prefetch : -1;
      ready.clear();
    }
    changed.notify_all();
    for (auto& producer : producers) producer.join();
    producers.clear();
  }

  Item take() {
    if (options.prefetch == 0) {
      Order order;
      return produce(0, order, position);
    }
    start();
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, [&] { return ready.count(consumed) != 0; });
    const auto it = ready.find(consumed);
    Item item = std::move(it->second);
    ready.erase(it);
    ++consumed;
    lock.unlock();
    changed.notify_all();
    return item;
  }
};

DataLoader::DataLoader(LoaderOptions options) : impl_(std::make_unique<Impl>()) {
  auto& im = *impl_;
  COHORT_CHECK(options.prefetch >= 0, ConfigError, "data: prefetch depth must be >= 0");
  im.options = options;
  im.collective = options.reader.driver == IoDriver::kMpiIo;
  COHORT_CHECK(options.workers >= 1 && (options.workers == 1 || !im.collective), ConfigError,
               "data.workers = ", options.workers,
               ": must be >= 1, and 1 with the MPI-IO driver (its reads are collective)");
  const int readers = options.prefetch > 0 ? options.workers : 1;
  for (int w = 0; w < readers; ++w) {
    im.readers.push_back(std::make_unique<BatchReader>(options.path, options.reader));
    if (!options.transform.empty()) {
      im.transforms.push_back(std::make_unique<BatchTransform>(options.transform, true));
    }
  }
  im.sampler = std::make_unique<DistributedSampler>(
      SamplerOptions{im.readers.front()->info().num_samples, options.rank, options.world,
                     options.seed, options.shuffle, options.drop_last});
  if (options.bucket > 0) {
    const auto& info = im.readers.front()->info();
    std::size_t field = 0;
    while (field < info.fields.size() &&
           (info.fields[field].target || !info.fields[field].ragged)) {
      ++field;
    }
    COHORT_CHECK(field < info.fields.size(), ConfigError, "data.bucket = ", options.bucket, ": ",
                 options.path, " has no ragged input field to bucket by length");
    im.lengths = sample_lengths(info, field);
  }
  im.batches =
      plan_batches(options.path, im.readers.front()->info().num_samples, options.batch_size,
                   options.world, options.drop_last, options.drop_last_batch)
          .batches_per_epoch;
}

DataLoader::~DataLoader() { impl_->halt(); }

const DatasetInfo& DataLoader::info() const { return impl_->readers.front()->info(); }
std::int64_t DataLoader::batches_per_epoch() const { return impl_->batches; }
std::int64_t DataLoader::samples_per_rank() const { return impl_->sampler->num_samples(); }
LoaderState DataLoader::state() const { return impl_->position; }
const WaitStats& DataLoader::wait() const { return impl_->wait; }
ReadStats DataLoader::read_stats() const {
  ReadStats total;
  for (const auto& reader : impl_->readers) {
    const ReadStats& s = reader->stats();
    total.batches += s.batches;
    total.samples += s.samples;
    total.runs += s.runs;
    total.pread_runs += s.pread_runs;
    total.bytes += s.bytes;
    total.read_seconds += s.read_seconds;
    total.convert_seconds += s.convert_seconds;
  }
  return total;
}

std::optional<Batch> DataLoader::next() {
  auto& im = *impl_;
  const auto start = std::chrono::steady_clock::now();
  Item item = im.take();
  im.wait.last_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  im.wait.total_seconds += im.wait.last_seconds;
  if (auto* error = std::get_if<std::exception_ptr>(&item)) {
    im.halt();  // the producer has stopped; the next call starts afresh from position
    std::rethrow_exception(*error);
  }
  if (std::holds_alternative<EndOfEpoch>(item)) {
    im.position = LoaderState{im.position.epoch + 1, 0};
    return std::nullopt;
  }
  ++im.wait.batches;
  im.position.batch += 1;
  return std::move(std::get<Batch>(item));
}

void DataLoader::restore(LoaderState state) {
  auto& im = *impl_;
  COHORT_CHECK(state.epoch >= 0 && state.batch >= 0 && state.batch <= im.batches, ConfigError,
               "data: cannot resume at epoch ", state.epoch, " batch ", state.batch, " (",
               im.batches, " batches per epoch)");
  if (state == im.position) return;
  im.halt();
  im.position = state;
}

}  // namespace cohort::data
