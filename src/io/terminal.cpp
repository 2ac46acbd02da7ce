#include "cohort/io/terminal.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <streambuf>

namespace cohort::io {
namespace {

// The length of the UTF-8 sequence a lead byte starts (0: not a lead byte).
std::size_t sequence_length(unsigned char lead) {
  return lead < 0x80           ? 1
         : (lead >> 5) == 0x6  ? 2
         : (lead >> 4) == 0xe  ? 3
         : (lead >> 3) == 0x1e ? 4
                               : 0;
}

bool is_continuation(char byte) { return (static_cast<unsigned char>(byte) & 0xc0) == 0x80; }

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
struct Channel {
  int fd;
  PrintableFilter filter;
};

ssize_t channel_write(void* cookie, const char* text, std::size_t count) {
  auto* channel = static_cast<Channel*>(cookie);
  if (!write_all(channel->fd, channel->filter.pass(text, count))) return -1;
  return static_cast<ssize_t>(count);
}

// std::cout and std::cerr onto the filtered C streams, so that C and C++ output keep their order.
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

// Made once and never freed: the streams are flushed by exit(), after every destructor.
Channel out_channel{STDOUT_FILENO, {}};
Channel err_channel{STDERR_FILENO, {}};
std::FILE* filtered_out = nullptr;
std::FILE* filtered_err = nullptr;

}  // namespace

std::string PrintableFilter::pass(const char* text, std::size_t count) {
  std::string in = std::move(pending_);
  pending_.clear();
  in.append(text, count);
  std::string out;
  out.reserve(in.size());
  for (std::size_t i = 0; i < in.size();) {
    const auto c = static_cast<unsigned char>(in[i]);
    const std::size_t length = sequence_length(c);
    std::size_t present = 1;  // the bytes of the sequence that are here and well formed
    while (length > 1 && present < length && i + present < in.size() &&
           is_continuation(in[i + present])) {
      ++present;
    }
    if (length > 1 && present < length && i + present == in.size()) {
      pending_.assign(in, i, std::string::npos);  // its end may come with the next piece
      break;
    }
    const bool whole = length > 0 && present == length;
    const bool control =
        (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f ||
        (length == 2 && whole && c == 0xc2 && static_cast<unsigned char>(in[i + 1]) < 0xa0);
    if (!whole || control) {
      out += '?';
      i += whole ? length : 1;
    } else {
      out.append(in, i, length);
      i += length;
    }
  }
  return out;
}

std::string PrintableFilter::finish() {
  std::string held(pending_.size(), '?');
  pending_.clear();
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
  static StdioBuffer out_buffer(filtered_out);
  static StdioBuffer err_buffer(filtered_err);
  std::cout.rdbuf(&out_buffer);
  std::cerr.rdbuf(&err_buffer);
}

int terminal_fd(std::FILE* stream) {
  if (stream == stdout) return STDOUT_FILENO;
  if (stream == stderr) return STDERR_FILENO;
  return fileno(stream);
}

void write_control(std::FILE* stream, const char* sequence) {
  if (stream == stdout) std::cout.flush();
  std::fflush(stream);
  const int fd = terminal_fd(stream);
  if (fd >= 0) write_all(fd, sequence);  // nothing to draw on when it fails
}

}  // namespace cohort::io
