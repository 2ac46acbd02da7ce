// The one way to the terminal for everything a process prints. install_printable_output(),
// called once at the top of each executable (cli::exit_status_of), replaces C's stdout and stderr
// by streams that pass what they are given through a PrintableFilter before it reaches file
// descriptors 1 and 2, and points std::cout and std::cerr at them. So every byte printed through
// printf, iostreams, or a library's fprintf(stderr) (HDF5's error stack, LibTorch's warnings) is
// valid UTF-8 without a control character other than newline and tab: a path, a class name, a
// tensor name or an attribute that any command prints, today's or tomorrow's, cannot move the
// cursor, clear the screen or leave invalid UTF-8 on a terminal or in a log.
//
// A control sequence a command writes on purpose (top's redraw, the progress bar) goes past the
// filter through write_control(); tests/tools/terminal_text.sh fails a source that writes to
// descriptors 1 or 2 another way, or asks stdout for its descriptor (fileno() is -1 now: use
// terminal_fd()).
#pragma once

#include <cstdio>
#include <string>

namespace cohort::io {

// What of a byte stream is printable, as io::printable says for one string (io::utf8_length's
// rule) but keeping newline and tab: a control character (C0, DEL, C1) or a byte that is not
// UTF-8 becomes '?'. A UTF-8 sequence split between two pieces is held until its last byte
// comes. Trivially destructible: a stream flushed by exit() after static destructors ran may
// still pass its last bytes through one.
class PrintableFilter {
 public:
  std::string pass(const char* text, std::size_t count);
  // What is still held (the start of a sequence that never ended), as '?'s.
  std::string finish();

 private:
  char pending_[4] = {};
  std::size_t pending_size_ = 0;
};

// Installs the filtered stdout and stderr (idempotent), std::cout, std::cerr and std::clog on
// them, and a flush at exit that also prints a character left unfinished. Never throws: where
// the streams cannot be made, the process prints unfiltered and says so once on stderr.
void install_printable_output();

// Flushes the filtered streams, a character left unfinished printed as '?' (before exec).
void flush_printable_output();

// The descriptor a stream writes to: 1 for stdout, 2 for stderr (filtered or not), fileno()
// for others.
int terminal_fd(std::FILE* stream);

// Writes `sequence`, a control sequence of Cohort's own (never outside text), to `stream` past
// the filter, after what the stream holds.
void write_control(std::FILE* stream, const char* sequence);

}  // namespace cohort::io
