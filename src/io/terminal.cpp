#include "cohort/io/terminal.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <new>
#include <streambuf>

#include "cohort/io/text.hpp"

namespace cohort::io {
namespace {

bool write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// One filtered descriptor: the cookie of its C stream. Writes come under the stream's own lock.
// Trivially destructible (a stream may be flushed after static destructors ran).
struct Channel {
  int fd;
  PrintableFilter filter;
};

ssize_t channel_write(void* cookie, const char* text, std::size_t count) {
  auto* channel = static_cast<Channel*>(cookie);
  if (!write_all(channel->fd, channel->filter.pass(text, count))) return -1;
  return static_cast<ssize_t>(count);
}

// std::cout, std::cerr and std::clog onto the filtered C streams, so that C and C++ output keep
// their order.
class StdioBuffer final : public std::streambuf {
 public:
  explicit StdioBuffer(std::FILE* stream) : stream_(stream) {}

 protected:
  int_type overflow(int_type c) override {
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    return std::fputc(traits_type::to_char_type(c), stream_) == EOF ? traits_type::eof() : c;
  }
  std::streamsize xsputn(const char* text, std::streamsize count) override {
    return static_cast<std::streamsize>(
        std::fwrite(text, 1, static_cast<std::size_t>(count), stream_));
  }
  int sync() override { return std::fflush(stream_) == 0 ? 0 : -1; }

 private:
  std::FILE* stream_;
};

std::FILE* filtered_stream(Channel* channel, int mode) {
  const cookie_io_functions_t functions{nullptr, channel_write, nullptr, nullptr};
  std::FILE* stream = fopencookie(channel, "w", functions);
  if (stream != nullptr) std::setvbuf(stream, nullptr, mode, mode == _IONBF ? 0 : BUFSIZ);
  return stream;
}

// The streams live as long as the process: std::cout may be used by a static destructor, and
// exit() flushes C's streams after those ran. So the buffers are made in static storage that is
// never destroyed (as std::cout itself is), and the channels are trivially destructible.
Channel out_channel{STDOUT_FILENO, {}};
Channel err_channel{STDERR_FILENO, {}};
std::FILE* filtered_out = nullptr;
std::FILE* filtered_err = nullptr;
alignas(StdioBuffer) unsigned char out_buffer_storage[sizeof(StdioBuffer)];
alignas(StdioBuffer) unsigned char err_buffer_storage[sizeof(StdioBuffer)];

void finish(Channel& channel, std::FILE* stream) {
  flockfile(stream);
  std::fflush(stream);
  write_all(channel.fd, channel.filter.finish());
  funlockfile(stream);
}

void flush_at_exit() { flush_printable_output(); }

}  // namespace

std::string PrintableFilter::pass(const char* text, std::size_t count) {
  std::string in(pending_, pending_size_);
  in.append(text, count);
  std::string out;
  out.reserve(in.size());
  const std::size_t taken =
      append_printable(out, reinterpret_cast<const unsigned char*>(in.data()), in.size(),
                       /*keep_lines=*/true, /*hold_unfinished=*/true);
  pending_size_ = in.copy(pending_, sizeof pending_, taken);  // at most 3 bytes are left
  return out;
}

std::string PrintableFilter::finish() {
  std::string held(pending_size_, '?');
  pending_size_ = 0;
  return held;
}

void install_printable_output() {
  if (filtered_out != nullptr) return;
  std::cout.flush();
  std::cerr.flush();
  std::fflush(stdout);
  std::fflush(stderr);
  filtered_out = filtered_stream(&out_channel, isatty(STDOUT_FILENO) ? _IOLBF : _IOFBF);
  filtered_err = filtered_stream(&err_channel, _IONBF);
  if (filtered_out == nullptr || filtered_err == nullptr) {
    std::fprintf(stderr, "cohort: warning: cannot filter the output (%s): printed as it comes\n",
                 std::strerror(errno));
    return;
  }
  stdout = filtered_out;  // glibc: stdout and stderr are variables a program may set
  stderr = filtered_err;
  // Never destroyed (the storage's comment): placement, not an allocation.
  auto* out_buffer = ::new (out_buffer_storage) StdioBuffer(filtered_out);
  auto* err_buffer = ::new (err_buffer_storage) StdioBuffer(filtered_err);
  std::cout.rdbuf(out_buffer);
  std::cerr.rdbuf(err_buffer);
  std::clog.rdbuf(err_buffer);
  std::atexit(flush_at_exit);  // runs before the static destructors made before it
}

void flush_printable_output() {
  if (filtered_out == nullptr) return;
  std::cout.flush();
  finish(out_channel, filtered_out);
  finish(err_channel, filtered_err);
}

int terminal_fd(std::FILE* stream) {
  if (stream == stdout) return STDOUT_FILENO;
  if (stream == stderr) return STDERR_FILENO;
  return fileno(stream);
}

void write_control(std::FILE* stream, const char* sequence) {
  if (stream == stdout) std::cout.flush();
  const int fd = terminal_fd(stream);
  flockfile(stream);  // after what the stream holds, before anything another thread adds
  std::fflush(stream);
  if (fd >= 0) write_all(fd, sequence);  // nothing to draw on when it fails
  funlockfile(stream);
}

}  // namespace cohort::io
