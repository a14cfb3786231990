// Digests for cache keys and entry checksums: XXH3, 128 bits (libxxhash).
// A content-addressed cache needs collision resistance against accidents,
// not adversaries (whoever can write the cache directory can write any
// entry), and XXH3 needs no library start-up: OpenSSL's SHA-256, used
// before, spent 1-2 ms initialising on the first key of every process.
#pragma once

#include <array>
#include <string>
#include <string_view>

namespace alloy::jit {

std::array<unsigned char, 16> digest(std::string_view data);
std::string digest_hex(std::string_view data);  // 32 lower-case hex digits

// A cache key from named parts. Each part is length-prefixed, so two lists of
// parts hash alike only when every name and value is identical.
class KeyBuilder {
 public:
  KeyBuilder& add(std::string_view name, std::string_view value);
  std::string hex() const { return digest_hex(text_); }

 private:
  std::string text_;
};

}  // namespace alloy::jit
