// The GPT-2 byte-level alphabet: each byte maps to one printable code point, so byte-level
// vocabularies are strings of those code points.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace grt::text {

// UTF-8 of the code point that stands for byte b.
const std::array<std::string, 256>& byte_to_unicode();
// The byte a code point stands for, or -1 when cp is not in the alphabet.
int unicode_to_byte(uint32_t cp);
// Maps every byte of raw to its alphabet character (appends to out).
void byte_level_encode(std::string_view raw, std::string& out);
// Maps a token back to bytes; false (out unchanged) when a character is not in the alphabet.
bool byte_level_decode(std::string_view token, std::string& out);

}  // namespace grt::text
