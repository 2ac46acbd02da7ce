#include "cohort/comm/flight_recorder.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace cohort::comm {

void FlightRecorder::started(const FlightRecord& record) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (ring_.size() < capacity_) {
    ring_.push_back(record);
  } else {
    ring_[next_] = record;
  }
  next_ = (next_ + 1) % capacity_;
}

void FlightRecorder::finished(std::uint64_t seq) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& record : ring_) {
    if (record.seq == seq && !record.done) {
      record.done = true;
      record.end = std::chrono::steady_clock::now();
      OpTotals& t = totals_[record.op];
      ++t.count;
      t.bytes += record.bytes;
      const auto begin = std::max(record.start, last_end_);
      if (record.end > begin)
        t.busy_seconds += std::chrono::duration<double>(record.end - begin).count();
      last_end_ = record.end;
      return;
    }
  }
}

OpTotals FlightRecorder::totals(const std::string& op) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = totals_.find(op);
  return it == totals_.end() ? OpTotals{} : it->second;
}

std::vector<FlightRecord> FlightRecorder::snapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<FlightRecord> out;
  out.reserve(ring_.size());
  const size_t start = ring_.size() < capacity_ ? 0 : next_;
  for (size_t i = 0; i < ring_.size(); ++i) out.push_back(ring_[(start + i) % ring_.size()]);
  return out;
}

bool FlightRecorder::first_overdue(std::chrono::steady_clock::time_point now,
                                   FlightRecord& out) const {
  std::lock_guard<std::mutex> lock(mutex_);
  bool found = false;
  for (const auto& record : ring_) {
    if (!record.done && record.deadline < now && (!found || record.seq < out.seq)) {
      out = record;
      found = true;
    }
  }
  return found;
}

std::string FlightRecorder::dump() const {
  const auto now = std::chrono::steady_clock::now();
  auto ms = [&](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double, std::milli>(now - t).count();
  };
  std::ostringstream out;
  for (const auto& r : snapshot()) {
    char line[256];
    std::snprintf(
        line, sizeof line, "  #%-6llu %-14s %10lld x %-9s peer %-3d started %9.1f ms ago, %s",
        static_cast<unsigned long long>(r.seq), r.op.c_str(), static_cast<long long>(r.numel),
        r.dtype.c_str(), r.peer, ms(r.start), r.done ? "done" : "IN FLIGHT");
    out << line;
    if (r.done)
      out << " in " << std::chrono::duration<double, std::milli>(r.end - r.start).count() << " ms";
    out << "\n";
  }
  return out.str();
}

}  // namespace cohort::comm
