// The small subset of JSON that safetensors headers use: objects, arrays,
// strings, integers, null (and true/false, floats for tolerance). Parsing
// only; writers build their text directly with json_quote.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace alloy::io {

struct Json {
  enum class Kind { null, boolean, number, string, array, object } kind = Kind::null;
  bool boolean = false;
  double number = 0;
  bool is_integer = false;
  int64_t integer = 0;
  std::string string;
  std::vector<Json> items;                            // array
  std::vector<std::pair<std::string, Json>> members;  // object, in file order
  const Json* find(const std::string& key) const;
};

// Throws std::runtime_error("[op] ...") on malformed text.
Json parse_json(const std::string& text, const char* op);
std::string json_quote(const std::string& s);

}  // namespace alloy::io
