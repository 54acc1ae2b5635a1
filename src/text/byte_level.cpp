#include "text/byte_level.h"

#include <vector>

#include "text/utf8.h"

namespace grt::text {
namespace {

struct Tables {
  std::array<std::string, 256> to_unicode;
  std::array<int, 512> to_byte;  // every alphabet code point is < 512
  Tables() {
    to_byte.fill(-1);
    std::array<uint32_t, 256> cp{};
    std::array<bool, 256> direct{};
    for (int b = '!'; b <= '~'; ++b) direct[b] = true;
    for (int b = 0xA1; b <= 0xAC; ++b) direct[b] = true;
    for (int b = 0xAE; b <= 0xFF; ++b) direct[b] = true;
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) cp[b] = direct[b] ? static_cast<uint32_t>(b) : next++;
    for (int b = 0; b < 256; ++b) {
      append_utf8(to_unicode[b], cp[b]);
      to_byte[cp[b]] = b;
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

const std::array<std::string, 256>& byte_to_unicode() { return tables().to_unicode; }

int unicode_to_byte(uint32_t cp) { return cp < 512 ? tables().to_byte[cp] : -1; }

void byte_level_encode(std::string_view raw, std::string& out) {
  const auto& t = tables().to_unicode;
  for (unsigned char c : raw) out += t[c];
}

bool byte_level_decode(std::string_view token, std::string& out) {
  size_t start = out.size();
  size_t i = 0;
  while (i < token.size()) {
    unsigned char c = static_cast<unsigned char>(token[i]);
    uint32_t cp;
    if (c < 0x80) {
      cp = c;
      i += 1;
    } else if ((c & 0xE0) == 0xC0 && i + 1 < token.size()) {
      cp = ((c & 0x1Fu) << 6) | (static_cast<unsigned char>(token[i + 1]) & 0x3Fu);
      i += 2;
    } else {
      out.resize(start);
      return false;
    }
    int b = unicode_to_byte(cp);
    if (b < 0) {
      out.resize(start);
      return false;
    }
    out += static_cast<char>(b);
  }
  return true;
}

}  // namespace grt::text
