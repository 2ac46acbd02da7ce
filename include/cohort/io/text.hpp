// Outside text on its way to a terminal, for every module that prints it (a dataset's class
// names, a run's metrics, a path): one function makes it safe.
#pragma once

#include <cstddef>
#include <string>

namespace cohort::io {

// The length of the UTF-8 character that starts `text` (`available` bytes there): 1 to 4 when
// it is a whole, well-formed one (RFC 3629, table 3-7: no overlong form, no surrogate, nothing
// above U+10FFFF); 0 when it is not; -1 when the bytes so far begin one and it goes on past
// `available`. The one rule io::printable and io::PrintableFilter share.
inline int utf8_length(const unsigned char* text, std::size_t available) {
  const unsigned char lead = text[0];
  int length = 0;
  unsigned char low = 0x80, high = 0xbf;  // the second byte's range
  if (lead < 0x80) return 1;
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    low = lead == 0xe0 ? 0xa0 : 0x80;
    high = lead == 0xed ? 0x9f : 0xbf;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    low = lead == 0xf0 ? 0x90 : 0x80;
    high = lead == 0xf4 ? 0x8f : 0xbf;
  } else {
    return 0;
  }
  for (int k = 1; k < length; ++k) {
    if (static_cast<std::size_t>(k) >= available) return -1;
    const unsigned char byte = text[k];
    if (k == 1 ? (byte < low || byte > high) : (byte < 0x80 || byte > 0xbf)) return 0;
  }
  return length;
}

// Whether the character of `length` bytes at `text` is a control character: C0, DEL, or C1.
inline bool is_control(const unsigned char* text, int length) {
  return (length == 1 && (text[0] < 0x20 || text[0] == 0x7f)) ||
         (length == 2 && text[0] == 0xc2 && text[1] < 0xa0);
}

// Appends the printable form of bytes[0, count) to `out`: a control character (C0, DEL, C1) as
// one '?', a byte that is not UTF-8 as one '?' each; newline and tab kept when `keep_lines`.
// With `hold_unfinished`, a character cut off at the end is not appended. Returns the bytes
// taken. The one loop of io::printable and io::PrintableFilter.
inline std::size_t append_printable(std::string& out, const unsigned char* bytes, std::size_t count,
                                    bool keep_lines, bool hold_unfinished) {
  std::size_t i = 0;
  while (i < count) {
    const int length = utf8_length(bytes + i, count - i);
    if (length < 0 && hold_unfinished) break;  // its end may come with the next piece
    const bool kept = keep_lines && (bytes[i] == '\n' || bytes[i] == '\t');
    if (length <= 0 || (!kept && is_control(bytes + i, length))) {
      out += '?';
      i += length > 0 ? static_cast<std::size_t>(length) : 1;
      continue;
    }
    out.append(reinterpret_cast<const char*>(bytes + i), static_cast<std::size_t>(length));
    i += static_cast<std::size_t>(length);
  }
  return i;
}

// `text` made safe for a terminal: control characters (C0, DEL, and C1 as UTF-8 or as raw bytes)
// and bytes that are not valid UTF-8 become '?'. Text from metrics.jsonl is written by whoever
// can write the run directory; an escape sequence in it must not reach the user's terminal.
inline std::string printable(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  append_printable(out, reinterpret_cast<const unsigned char*>(text.data()), text.size(),
                   /*keep_lines=*/false, /*hold_unfinished=*/false);
  return out;
}

}  // namespace cohort::io
