// UTF-8 helpers of the text layer: validation, lossy repair (as Rust's from_utf8_lossy), and
// code point encoding.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace grt::text {

// Byte offset of the first invalid UTF-8 sequence in s, or npos when s is valid.
size_t find_invalid_utf8(std::string_view s);
// Length of the (valid) UTF-8 character whose lead byte is b: 1..4.
inline size_t utf8_char_len(unsigned char b) {
  return b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
}
// s with every maximal invalid subsequence replaced by U+FFFD, as Rust's String::from_utf8_lossy.
std::string utf8_lossy(std::string_view s);
// Appends the UTF-8 encoding of code point cp.
void append_utf8(std::string& out, uint32_t cp);
// True when s ends inside a character that more bytes could complete, or with U+FFFD (what a
// lossy decode makes of such a tail): streaming holds such text back.
bool ends_incomplete(std::string_view s);

}  // namespace grt::text
