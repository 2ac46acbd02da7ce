// TensorBoard event files (monitor.tensorboard_dir), written by rank 0's monitor.
//
// Protocol: the constructor makes the directory, cuts from the event files an earlier start of this
// run wrote (named "*.<run tag>.cohort": Cohort's own, of this run; another run's in a shared
// directory, and a file named before run tags, are left alone) every record of a step after
// `resume_step` (a run resumed from step 20 after reaching step 26 writes steps 21..26 again:
// TensorBoard would show them twice), and opens a new file
// "events.out.tfevents.<seconds>.<host>.<pid>.<run tag>.cohort" that starts with the
// file_version event. The run tag is 8 hex digits of the run directory's checksum. scalars()
// appends one Event with a Summary of simple values for a step. Records are TensorBoard's framing:
// length (uint64 LE), masked CRC-32C of the length, the serialised Event (protobuf, from
// tensorboard_event.proto), masked CRC-32C of the data. Written through a buffer, flushed by
// flush() (the monitor calls it at most once a second and at the end). Throws IoError naming the
// file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cohort/io/output.hpp"

namespace cohort::monitor {

class TensorBoardWriter {
 public:
  TensorBoardWriter(const std::string& dir, std::int64_t resume_step, const std::string& run_dir);
  ~TensorBoardWriter();  // writes the records flush() has not
  TensorBoardWriter(const TensorBoardWriter&) = delete;
  TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;
  void scalars(std::int64_t step, const std::vector<std::pair<std::string, double>>& values);
  void flush();
  const std::string& path() const { return path_; }

 private:
  void write_record(const std::string& data);
  std::string path_;
  std::optional<io::RunFile> file_;  // created new (kNew): never an existing file or a link
  std::string pending_;              // records until flush()
};

// The run's tag in its event files' names: 8 hex digits of the checksum of its run directory
// (absolute, links resolved where it exists).
std::string run_tag(const std::string& run_dir);

// CRC-32C (Castagnoli) of `size` bytes, and TensorBoard's mask of it.
std::uint32_t crc32c(const void* data, std::size_t size);
std::uint32_t masked_crc32c(const void* data, std::size_t size);

// Cuts `path` (an event file) before its first record of a step after `step`; a record that
// cannot be read ends the file there too. Returns the records kept, or -1 (with a warning) when
// `path` is not an event file this writer could have made: a link, not a regular file, or no
// event record at its start. Such a file is left as it is.
std::int64_t cut_events_after(const std::string& path, std::int64_t step);

}  // namespace cohort::monitor
