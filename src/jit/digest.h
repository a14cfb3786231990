// SHA-256 (OpenSSL) for cache keys and entry checksums.
#pragma once

#include <array>
#include <string>
#include <string_view>

namespace alloy::jit {

std::array<unsigned char, 32> sha256(std::string_view data);
std::string sha256_hex(std::string_view data);

// A cache key from named parts. Each part is length-prefixed, so two lists of
// parts hash alike only when every name and value is identical.
class KeyBuilder {
 public:
  KeyBuilder& add(std::string_view name, std::string_view value);
  std::string hex() const { return sha256_hex(text_); }

 private:
  std::string text_;
};

}  // namespace alloy::jit
