// FlightRecorder: what one communicator's operations are doing, in two parts kept apart as c10d
// keeps them: the set of operations in flight (every one, from started() until finished(), however
// many others start and end meanwhile: what the watchdog checks), and a ring of the last N
// operations (operation, element count, dtype, sequence number, start and end time), dumped when
// the watchdog fires so that a hang can be read after the fact. Thread-safe.
//
// Completion: a backend marks an operation finished when it completes (the worker thread's
// collectives), or when its Work is tested, waited for or dropped. An operation that only a
// test() would see complete (a posted MPI send or receive nobody waits for yet) registers a
// probe: the watchdog calls it, outside the recorder's lock, before it takes the operation for
// a hang.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace cohort::comm {

struct FlightRecord {
  std::uint64_t seq = 0;
  std::string op;
  std::int64_t numel = 0;
  std::string dtype;
  int peer = -1;  // root or p2p peer, -1 for symmetric collectives
  std::int64_t bytes = 0;
  std::chrono::steady_clock::time_point start{};
  std::chrono::steady_clock::time_point deadline{};
  std::chrono::steady_clock::time_point end{};
  bool done = false;
};

// Running totals of one kind of operation since the communicator was made: how many finished,
// their bytes, and their busy time. Operations run one after another in issue order, so an
// operation's busy time starts when it was issued or when the previous one ended, whichever is
// later: waiting behind an earlier bucket is not counted twice.
struct OpTotals {
  std::int64_t count = 0;
  std::int64_t bytes = 0;
  double busy_seconds = 0;
};

class FlightRecorder {
 public:
  // True once the operation has completed; may complete it (and call finished()). Never blocks.
  using Probe = std::function<bool()>;

  explicit FlightRecorder(std::size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {}

  void started(const FlightRecord& record);
  // For an operation still in flight (a no-op once it has finished).
  void set_probe(std::uint64_t seq, Probe probe);
  void finished(std::uint64_t seq);
  // The ring, oldest first.
  std::vector<FlightRecord> snapshot() const;
  std::size_t in_flight() const;
  // The operations in flight past their deadline, oldest first, each with its probe (or none).
  std::vector<std::pair<FlightRecord, Probe>> overdue(
      std::chrono::steady_clock::time_point now) const;
  // One line per record, newest last, times relative to `now`.
  std::string dump() const;
  // Totals of the finished operations named `op` ("all_reduce", ...).
  OpTotals totals(const std::string& op) const;

 private:
  struct InFlight {
    FlightRecord record;
    Probe probe;
  };
  std::size_t capacity_;
  mutable std::mutex mutex_;
  std::map<std::uint64_t, InFlight> in_flight_;  // by sequence number: oldest first
  std::vector<FlightRecord> ring_;
  std::size_t next_ = 0;
  std::map<std::string, OpTotals> totals_;
  std::chrono::steady_clock::time_point last_end_{};
};

}  // namespace cohort::comm
