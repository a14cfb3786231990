#include "jit/digest.h"

// Header-only use: the library carries no run-time dependency on libxxhash.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace alloy::jit {

std::array<unsigned char, 16> digest(std::string_view data) {
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, XXH3_128bits(data.data(), data.size()));
  std::array<unsigned char, 16> out{};
  for (size_t i = 0; i < out.size(); ++i) out[i] = c.digest[i];
  return out;
}

std::string digest_hex(std::string_view data) {
  static const char* digits = "0123456789abcdef";
  std::string hex;
  hex.reserve(32);
  for (unsigned char c : digest(data)) {
    hex += digits[c >> 4];
    hex += digits[c & 15];
  }
  return hex;
}

KeyBuilder& KeyBuilder::add(std::string_view name, std::string_view value) {
  text_ += std::to_string(name.size()) + ":" + std::string(name) + "=" + std::to_string(value.size()) + ":";
  text_.append(value);
  text_ += '\n';
  return *this;
}

}  // namespace alloy::jit
