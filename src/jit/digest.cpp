#include "jit/sha256.h"

#include <openssl/evp.h>

#include <stdexcept>

namespace alloy::jit {

std::array<unsigned char, 32> sha256(std::string_view data) {
  std::array<unsigned char, 32> out{};
  unsigned int len = 0;
  if (EVP_Digest(data.data(), data.size(), out.data(), &len, EVP_sha256(), nullptr) != 1 || len != out.size()) {
    throw std::runtime_error("[alloy::jit::sha256] OpenSSL's EVP_Digest failed");
  }
  return out;
}

std::string sha256_hex(std::string_view data) {
  static const char* digits = "0123456789abcdef";
  std::string hex;
  hex.reserve(64);
  for (unsigned char c : sha256(data)) {
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
