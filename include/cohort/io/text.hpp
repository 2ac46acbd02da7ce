// Outside text on its way to a terminal, for every module that prints it (a dataset's class
// names, a run's metrics, a path): one function makes it safe.
#pragma once

#include <string>

namespace cohort::io {

// `text` made safe for a terminal: control characters (C0, DEL, and C1 as UTF-8 or as raw bytes)
// and bytes that are not valid UTF-8 become '?'. Text from metrics.jsonl is written by whoever
// can write the run directory; an escape sequence in it must not reach the user's terminal.
inline std::string printable(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    std::size_t length = c < 0x80           ? 1
                         : (c >> 5) == 0x6  ? 2
                         : (c >> 4) == 0xe  ? 3
                         : (c >> 3) == 0x1e ? 4
                                            : 0;
    bool ok = length > 0 && i + length <= text.size();
    for (std::size_t k = 1; ok && k < length; ++k) {
      ok = (static_cast<unsigned char>(text[i + k]) & 0xc0) == 0x80;
    }
    const bool control =
        c < 0x20 || c == 0x7f ||
        (length == 2 && c == 0xc2 && ok && static_cast<unsigned char>(text[i + 1]) < 0xa0);
    if (!ok || control) {
      out += '?';
      i += ok ? length : 1;
      continue;
    }
    out.append(text, i, length);
    i += length;
  }
  return out;
}

}  // namespace cohort::io
