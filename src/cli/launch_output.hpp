// mpirun's stderr as `cohort launch` passes it on: the ranks' lines as they come, without the
// paragraph mpirun adds after a rank's non-zero exit ("Primary job terminated normally, but 1
// process returned a non-zero exit code", "mpirun/prterun detected that one or more processes
// exited with non-zero status") once that rank has said its own error and recorded its code
// (launch_record.hpp). Paragraphs about anything else (a rank killed by a signal, MPI_Abort, a
// start-up failure) pass unchanged: they are the only account of those.
//
// A thread reads the pipe; it ends at the pipe's end, or, once the launcher says mpirun has
// ended, at the first second without output (a stray process of the job may hold the pipe).
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "cohort/io/unique_fd.hpp"
#include "launch_record.hpp"

namespace cohort::cli {

// The pure part: lines in, lines to print out. A paragraph is the text between two lines of
// dashes, mpirun's frame.
class ParagraphFilter {
 public:
  // `drop` answers whether mpirun's non-zero-exit paragraph is redundant now (asked only then).
  std::vector<std::string> line(const std::string& text, const std::function<bool()>& drop);
  std::vector<std::string> finish();  // an unclosed paragraph, as it came

 private:
  std::vector<std::string> block_;
  bool in_block_ = false;
};

class MpirunStderr {
 public:
  MpirunStderr(UniqueFd from, const LaunchRecord& record);
  ~MpirunStderr();  // waits for the reader: call mpirun_ended() first
  MpirunStderr(const MpirunStderr&) = delete;
  MpirunStderr& operator=(const MpirunStderr&) = delete;

  void mpirun_ended() { ended_ = true; }

 private:
  void read_all();

  UniqueFd from_;
  const LaunchRecord& record_;
  std::atomic<bool> ended_{false};
  std::thread reader_;
};

}  // namespace cohort::cli
