// FlightRecorder: a small ring buffer of the last collectives of one communicator (operation,
// element count, dtype, sequence number, start and end time), dumped when the watchdog fires so
// that a hang can be read after the fact. Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
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
  explicit FlightRecorder(std::size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {}

  void started(const FlightRecord& record);
  void finished(std::uint64_t seq);
  // Oldest first.
  std::vector<FlightRecord> snapshot() const;
  // The oldest operation still in flight past its deadline, if any.
  bool first_overdue(std::chrono::steady_clock::time_point now, FlightRecord& out) const;
  // One line per record, newest last, times relative to `now`.
  std::string dump() const;
  // Totals of the finished operations named `op` ("all_reduce", ...).
  OpTotals totals(const std::string& op) const;

 private:
  std::size_t capacity_;
  mutable std::mutex mutex_;
  std::vector<FlightRecord> ring_;
  std::size_t next_ = 0;
  std::map<std::string, OpTotals> totals_;
  std::chrono::steady_clock::time_point last_end_{};
};

}  // namespace cohort::comm
