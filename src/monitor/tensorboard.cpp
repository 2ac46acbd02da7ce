#include "monitor/tensorboard.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string_view>

#include "cohort/error.hpp"
#include "cohort/io/checksum.hpp"
#include "cohort/io/files.hpp"
#include "cohort/io/text.hpp"
#include "cohort/io/unique_fd.hpp"
#include "tensorboard_event.pb.h"

namespace cohort::monitor {
namespace {

constexpr const char* kSuffix = ".cohort";
// A scalar record is ~100 bytes; a length beyond this is not a record of ours.
constexpr std::uint64_t kMaxRecordBytes = 16u << 20;

std::array<std::uint32_t, 256> make_table() {
  std::array<std::uint32_t, 256> table{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0x82F63B78u ^ (c >> 1) : c >> 1;
    table[i] = c;
  }
  return table;
}

void put_le(std::string& out, std::uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

std::uint64_t get_le(const char* in, int bytes) {
  std::uint64_t value = 0;
  for (int i = bytes - 1; i >= 0; --i) value = value << 8 | static_cast<unsigned char>(in[i]);
  return value;
}

double wall_time() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string host_name() {
  std::array<char, 256> name{};
  ::gethostname(name.data(), name.size() - 1);
  return name.data();
}

}  // namespace

std::uint32_t crc32c(const void* data, std::size_t size) {
  static const auto table = make_table();
  const auto* bytes = static_cast<const unsigned char*>(data);
  std::uint32_t crc = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < size; ++i) crc = table[(crc ^ bytes[i]) & 0xff] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

std::uint32_t masked_crc32c(const void* data, std::size_t size) {
  const std::uint32_t crc = crc32c(data, size);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

std::int64_t cut_events_after(const std::string& path, std::int64_t step) {
  // O_NOFOLLOW: a link with an event file's name (to a file outside the run) is never cut.
  const UniqueFd fd(::open(path.c_str(), O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  const int open_error = errno;
  struct stat st {};
  if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    struct stat link {};
    const bool is_link = ::lstat(path.c_str(), &link) == 0 && S_ISLNK(link.st_mode);
    const std::string what = is_link        ? "a symbolic link"
                             : fd.get() < 0 ? std::string(std::strerror(open_error))
                                            : io::describe_path(path);
    std::fprintf(stderr, "cohort: warning: %s: %s, not an event file of this run: left alone\n",
                 io::printable(path).c_str(), what.c_str());
    return -1;
  }
  const std::int64_t size = st.st_size;
  std::int64_t offset = 0, kept = 0;
  std::string data;
  while (offset + 12 <= size) {
    char head[12];
    io::read_at(fd.get(), offset, head, sizeof head, path);
    const std::uint64_t length = get_le(head, 8);
    if (get_le(head + 8, 4) != masked_crc32c(head, 8) || length > kMaxRecordBytes ||
        offset + 16 + static_cast<std::int64_t>(length) > size) {
      break;
    }
    data.resize(length + 4);
    io::read_at(fd.get(), offset + 12, data.data(), data.size(), path);
    tensorboard::Event event;
    if (get_le(data.data() + length, 4) != masked_crc32c(data.data(), length) ||
        !event.ParseFromArray(data.data(), static_cast<int>(length)) || event.step() > step) {
      break;
    }
    offset += 16 + static_cast<std::int64_t>(length);
    ++kept;
  }
  if (kept == 0 && size > 0) {  // not even a first event record: not a file this writer made
    std::fprintf(stderr, "cohort: warning: %s: not an event file (no event record): left alone\n",
                 io::printable(path).c_str());
    return -1;
  }
  COHORT_CHECK(offset == size || ::ftruncate(fd.get(), offset) == 0, IoError, path,
               ": cannot cut: ", std::strerror(errno));
  return kept;
}

std::string run_tag(const std::string& run_dir) {
  std::error_code error;
  auto path = std::filesystem::weakly_canonical(std::filesystem::absolute(run_dir, error), error);
  const std::string text = error ? run_dir : path.string();
  const std::string sum = io::bytes_checksum(text.data(), text.size());  // "xxh3-64:<16 hex>"
  return sum.substr(sum.size() - 8);
}

TensorBoardWriter::TensorBoardWriter(const std::string& dir, std::int64_t resume_step,
                                     const std::string& run_dir) {
  io::make_directories(dir);
  const std::string suffix = "." + run_tag(run_dir) + kSuffix;  // this run's files only
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    const bool ours = name.rfind("events.out.tfevents.", 0) == 0 && name.size() > suffix.size() &&
                      name.compare(name.size() - suffix.size(), std::string::npos, suffix) == 0;
    if (ours) cut_events_after(entry.path().string(), resume_step);
  }
  path_ = dir + "/events.out.tfevents." + std::to_string(static_cast<std::int64_t>(wall_time())) +
          "." + host_name() + "." + std::to_string(::getpid()) + suffix;
  file_.emplace(path_, io::RunFile::Mode::kNew);
  tensorboard::Event event;
  event.set_wall_time(wall_time());
  event.set_file_version("brain.Event:2");
  write_record(event.SerializeAsString());
  flush();
}

TensorBoardWriter::~TensorBoardWriter() {
  try {
    if (file_) flush();
  } catch (const std::exception& e) {  // a destructor does not throw: the loss is reported
    std::fprintf(stderr, "cohort: warning: %s\n", e.what());
  }
}

void TensorBoardWriter::scalars(std::int64_t step,
                                const std::vector<std::pair<std::string, double>>& values) {
  tensorboard::Event event;
  event.set_wall_time(wall_time());
  event.set_step(step);
  auto* summary = event.mutable_summary();
  for (const auto& [tag, value] : values) {
    auto* entry = summary->add_value();
    entry->set_tag(tag);
    entry->set_simple_value(static_cast<float>(value));
  }
  write_record(event.SerializeAsString());
}

void TensorBoardWriter::write_record(const std::string& data) {
  std::string record;
  record.reserve(data.size() + 16);
  put_le(record, data.size(), 8);
  put_le(record, masked_crc32c(record.data(), 8), 4);
  record += data;
  put_le(record, masked_crc32c(data.data(), data.size()), 4);
  pending_ += record;
}

void TensorBoardWriter::flush() {
  std::string text;
  text.swap(pending_);  // dropped even when the write fails: a record is never written twice
  file_->write(text);
}

}  // namespace cohort::monitor
