#include "cohort/data/loader.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <thread>
#include <variant>

#include "cohort/comm/device.hpp"
#include "cohort/data/batch_plan.hpp"
#include "cohort/data/transform.hpp"
#include "cohort/error.hpp"
#include "common/splitmix.hpp"

namespace cohort::data {
namespace {

using Clock = std::chrono::steady_clock;

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
  bool collective = false;    // MPI-IO: reads must match across ranks
  std::int64_t consumed = 0;  // items taken since the producer started
  std::int64_t claimed = 0;   // items some thread has begun reading
  bool caller_reads = false;  // next() may read an unclaimed item rather than sleep
  std::map<std::int64_t, Clock::time_point> begun;  // items being read: when their read began
  double read_seconds = 0;         // a batch read's running mean (0: none read yet)
  std::int64_t drain_target = -1;  // collective halt: read up to this many items, then stop
  std::vector<std::thread> producers;

  // The indices of one batch (batch b of epoch e), computed from a cached epoch order.
  struct Order {
    std::int64_t epoch = -1;
    std::vector<std::int64_t> indices;
  };
  Order caller_order;                 // next()'s own (the caller's reader, or prefetch 0)
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

  // Items claimed past what next() took: the prefetch depth (at least one per worker), and one
  // more for the caller's own read, so that its read never holds a worker back.
  std::int64_t window() const {
    return std::max<std::int64_t>(options.prefetch, static_cast<std::int64_t>(workers())) +
           (caller_reads ? 1 : 0);
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

  // Workers claim items in sequence order (claimed: the next item no thread has begun), each
  // waiting for room before it claims, so that nothing is read more than window() items past what
  // was consumed, and next() takes the items in sequence order. With collective MPI-IO (one
  // worker) every rank must make the same reads: halt() then sets drain_target to consumed +
  // prefetch, the same number on every rank (they consume in lockstep), and the producer reads up
  // to it before it stops, instead of stopping wherever it happens to be (which left a peer
  // blocked in a collective read for ever).
  void run(std::size_t worker) {
    // A device is current per thread: page-locked batches and transforms touch CUDA, and without
    // this a producer would make a context on device 0 of every rank of the node.
    comm::make_rank_device_current();
    Order order;
    for (;;) {
      std::int64_t n = 0;
      {
        std::unique_lock<std::mutex> lock(mutex);
        changed.wait(lock, [&] { return stop || claimed < consumed + window(); });
        if (stop && (drain_target < 0 || claimed >= drain_target)) return;
        n = claimed++;
        if (caller_reads) begun.emplace(n, Clock::now());  // only caller_should_read() asks
      }
      if (!deliver(worker, order, n)) return;
    }
  }

  // Reads item n with reader `which` and hands it to next(); false if it failed (the error is
  // handed to next(), which rethrows it).
  bool deliver(std::size_t which, Order& order, std::int64_t n) {
    Item item;
    try {
      item = produce(which, order, position_of(started, n));
    } catch (...) {
      item = std::current_exception();
    }
    const bool failed = std::holds_alternative<std::exception_ptr>(item);
    {
      std::lock_guard<std::mutex> lock(mutex);
      const auto it = begun.find(n);
      if (it != begun.end()) {
        if (std::holds_alternative<Batch>(item)) {
          const double took = std::chrono::duration<double>(Clock::now() - it->second).count();
          read_seconds = read_seconds == 0 ? took : 0.8 * read_seconds + 0.2 * took;
        }
        begun.erase(it);
      }
      if (!stop) ready.emplace(n, std::move(item));
    }
    // Notified after unlocking: a woken next() then finds the mutex free instead of sleeping
    // again on it straight away.
    changed.notify_all();
    return !failed;
  }

  void start() {
    if (options.prefetch > 0 && producers.empty()) {
      stop = false;
      drain_target = -1;
      consumed = 0;
      claimed = 0;
      begun.clear();
      started = position;
      for (std::size_t w = 0; w < workers(); ++w) producers.emplace_back([this, w] { run(w); });
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

  // Whether next(), waiting for item `consumed`, should read the next unclaimed item itself
  // (under the mutex): yes if that is the very item it waits for; yes if the read of its item
  // began less than half a read ago (reading another costs it at most about twice what waiting
  // would, and the loop is data-bound: the item was claimed late); no when that read is well
  // under way (a compute-bound loop that found its batch a little late: it waits out the rest
  // instead of paying a whole read). Not with collective reads, whose order must match.
  bool caller_should_read() const {
    if (!caller_reads || claimed >= consumed + window()) return false;
    if (claimed == consumed) return true;
    const auto it = begun.find(consumed);
    return it != begun.end() && read_seconds > 0 &&
           std::chrono::duration<double>(Clock::now() - it->second).count() < 0.5 * read_seconds;
  }

  // The next item in sequence; while it is not ready, the calling thread may read another itself
  // (caller_should_read) rather than sleep: a data-bound loop gains a reader, and most hand-offs
  // to a sleeping thread (a futex wake-up, dear on a VM) disappear.
  Item take() {
    if (options.prefetch == 0) return produce(0, caller_order, position);
    start();
    std::unique_lock<std::mutex> lock(mutex);
    while (ready.count(consumed) == 0) {
      if (caller_should_read()) {
        const std::int64_t n = claimed++;
        begun.emplace(n, Clock::now());
        lock.unlock();
        deliver(readers.size() - 1, caller_order, n);
        ++wait.own_reads;
        lock.lock();
      } else {
        changed.wait(lock);
      }
    }
    const auto it = ready.find(consumed);
    Item item = std::move(it->second);
    ready.erase(it);
    ++consumed;
    lock.unlock();
    changed.notify_all();
    return item;
  }

  // Producer threads: every reader but the caller's, when the caller has one.
  std::size_t workers() const { return readers.size() - (caller_reads ? 1 : 0); }
};

DataLoader::DataLoader(LoaderOptions options) : impl_(std::make_unique<Impl>()) {
  auto& im = *impl_;
  COHORT_CHECK(options.prefetch >= 0, ConfigError, "data: prefetch depth must be >= 0");
  im.options = options;
  im.collective = options.reader.driver == IoDriver::kMpiIo;
  COHORT_CHECK(options.workers >= 1 && (options.workers == 1 || !im.collective), ConfigError,
               "data.workers = ", options.workers,
               ": must be >= 1, and 1 with the MPI-IO driver (its reads are collective)");
  im.caller_reads = options.caller_reads && options.prefetch > 0 && !im.collective;
  const int readers = options.prefetch > 0 ? options.workers + (im.caller_reads ? 1 : 0) : 1;
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
