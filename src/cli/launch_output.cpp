#include "launch_output.hpp"

#include <poll.h>
#include <pthread.h>
#include <unistd.h>

#include <csignal>

#include <algorithm>

#include "cohort/io/terminal.hpp"

namespace cohort::cli {
namespace {

constexpr std::size_t kMaxBlockLines = 200;  // longer than any of mpirun's: not one of them
constexpr int kQuietAfterEndMs = 1000;
constexpr std::size_t kMaxPending = 64 * 1024;

bool is_frame(const std::string& line) {
  return line.size() >= 20 &&
         std::all_of(line.begin(), line.end(), [](char c) { return c == '-'; });
}

bool is_non_zero_exit_notice(const std::vector<std::string>& block) {
  std::string text;
  for (const auto& line : block) text += line + " ";
  return text.find("non-zero exit code") != std::string::npos ||
         text.find("exited with non-zero status") != std::string::npos;
}

void write_lines(const std::vector<std::string>& lines) {
  for (const auto& line : lines) {
    io::PrintableFilter filter;  // mpirun's and the ranks' text: tabs kept, controls not
    const std::string out = filter.pass(line.data(), line.size()) + filter.finish() + "\n";
    std::size_t done = 0;
    while (done < out.size()) {
      const ssize_t n = ::write(STDERR_FILENO, out.data() + done, out.size() - done);
      if (n <= 0) return;  // the user's stderr is gone: nothing left to tell
      done += static_cast<std::size_t>(n);
    }
  }
}

}  // namespace

std::vector<std::string> ParagraphFilter::line(const std::string& text,
                                               const std::function<bool()>& drop) {
  if (!in_block_) {
    // The launcher passed a stop signal on as SIGUSR1 (ops/step_runner.hpp): mpirun's note of it
    // would name a signal the user never sent.
    if (text.rfind("mpirun: Forwarding signal ", 0) == 0) return {};
    if (!is_frame(text)) return {text};
    in_block_ = true;
    block_ = {text};
    return {};
  }
  block_.push_back(text);
  if (!is_frame(text) && block_.size() < kMaxBlockLines) return {};
  in_block_ = false;
  std::vector<std::string> out;
  out.swap(block_);
  if (is_frame(text) && is_non_zero_exit_notice(out) && drop()) return {};
  return out;
}

std::vector<std::string> ParagraphFilter::finish() {
  in_block_ = false;
  std::vector<std::string> out;
  out.swap(block_);
  return out;
}

MpirunStderr::MpirunStderr(UniqueFd from, const LaunchRecord& record)
    : from_(std::move(from)), record_(record) {
  // The reader takes no signal: a SIGTERM for the launcher must reach the thread that passes it
  // on (ops/step_runner.hpp), not end the process here. Its mask is inherited from this one's.
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &previous);
  try {
    reader_ = std::thread([this] { read_all(); });
  } catch (...) {
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    throw;
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

MpirunStderr::~MpirunStderr() {
  ended_ = true;
  if (reader_.joinable()) reader_.join();
}

void MpirunStderr::read_all() {
  ParagraphFilter filter;
  std::string pending;
  char buffer[4096];
  while (true) {
    pollfd pfd{from_.get(), POLLIN, 0};
    const bool ended = ended_;
    const int ready = ::poll(&pfd, 1, ended ? kQuietAfterEndMs : 200);
    if (ready == 0 && ended) break;
    if (ready <= 0) continue;  // timeout while mpirun runs, or EINTR
    const ssize_t n = ::read(from_.get(), buffer, sizeof buffer);
    if (n <= 0) break;  // the end of the pipe (or an error reading it)
    pending.append(buffer, static_cast<std::size_t>(n));
    std::size_t start = 0;
    for (auto end = pending.find('\n'); end != std::string::npos;
         start = end + 1, end = pending.find('\n', start)) {
      write_lines(filter.line(pending.substr(start, end - start),
                              [this] { return record_.first_exit().has_value(); }));
    }
    pending.erase(0, start);
    if (pending.size() > kMaxPending) {  // a line without end: passed on in pieces
      write_lines(filter.line(pending, [] { return false; }));
      pending.clear();
    }
  }
  write_lines(filter.finish());
  if (!pending.empty()) write_lines({pending});
}

}  // namespace cohort::cli
