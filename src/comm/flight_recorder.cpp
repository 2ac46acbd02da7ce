#include "cohort/comm/flight_recorder.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <sstream>

namespace cohort::comm {

void FlightRecorder::started(const FlightRecord& record) {
  std::lock_guard<std::mutex> lock(mutex_);
  in_flight_[record.seq] = {record, {}};
  if (ring_.size() < capacity_) {
    ring_.push_back(record);
  } else {
    ring_[next_] = record;
  }
  next_ = (next_ + 1) % capacity_;
}

void FlightRecorder::set_probe(std::uint64_t seq, Probe probe) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = in_flight_.find(seq);
  if (it != in_flight_.end()) it->second.probe = std::move(probe);
}

void FlightRecorder::finished(std::uint64_t seq) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = in_flight_.find(seq);
  if (it == in_flight_.end()) return;  // finished already
  FlightRecord record = it->second.record;
  in_flight_.erase(it);
  record.done = true;
  record.end = std::chrono::steady_clock::now();
  OpTotals& t = totals_[record.op];
  ++t.count;
  t.bytes += record.bytes;
  const auto begin = std::max(record.start, last_end_);
  if (record.end > begin)
    t.busy_seconds += std::chrono::duration<double>(record.end - begin).count();
  last_end_ = record.end;
  for (auto& entry : ring_) {  // still in the ring unless N later operations pushed it out
    if (entry.seq == seq) entry = record;
  }
}

std::size_t FlightRecorder::in_flight() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return in_flight_.size();
}

std::vector<std::pair<FlightRecord, FlightRecorder::Probe>> FlightRecorder::overdue(
    std::chrono::steady_clock::time_point now) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::pair<FlightRecord, Probe>> out;
  for (const auto& [seq, entry] : in_flight_) {
    if (entry.record.deadline < now) out.emplace_back(entry.record, entry.probe);
  }
  return out;
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

std::string FlightRecorder::dump() const {
  const auto now = std::chrono::steady_clock::now();
  auto ms = [&](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double, std::milli>(now - t).count();
  };
  const auto ring = snapshot();
  std::vector<FlightRecord> records;
  {  // operations still in flight that later ones pushed out of the ring come first
    std::lock_guard<std::mutex> lock(mutex_);
    const std::uint64_t oldest = ring.empty() ? UINT64_MAX : ring.front().seq;
    for (const auto& [seq, entry] : in_flight_) {
      if (seq < oldest) records.push_back(entry.record);
    }
  }
  records.insert(records.end(), ring.begin(), ring.end());
  std::ostringstream out;
  for (const auto& r : records) {
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
