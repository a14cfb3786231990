// .safetensors: an 8-byte little-endian header length, a JSON header naming
// each tensor's dtype, shape and byte range, then the tensors' bytes.
#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "alloy/io.h"
#include "io/io_common.h"
#include "io/json.h"

namespace alloy {
namespace {

struct Name {
  Dtype dtype;
  const char* text;
};
// float64 is readable but, as in MLX, not written.
constexpr Name kNames[] = {
    {Dtype::bool_, "BOOL"}, {Dtype::uint8, "U8"},     {Dtype::int8, "I8"},    {Dtype::uint16, "U16"},
    {Dtype::int16, "I16"},  {Dtype::uint32, "U32"},   {Dtype::int32, "I32"},  {Dtype::uint64, "U64"},
    {Dtype::int64, "I64"},  {Dtype::float16, "F16"},  {Dtype::bfloat16, "BF16"}, {Dtype::float32, "F32"},
    {Dtype::float64, "F64"}, {Dtype::complex64, "C64"},
};

const char* name_of(Dtype d) {
  if (d == Dtype::float64) throw std::runtime_error("[save_safetensors] received invalid dtype.");
  for (auto& n : kNames) {
    if (n.dtype == d) return n.text;
  }
  throw std::runtime_error("[save_safetensors] received invalid dtype.");
}

Dtype dtype_from_name(const std::string& s) {
  for (auto& n : kNames) {
    if (s == n.text) return n.dtype;
  }
  throw std::runtime_error("[load_safetensors] unsupported dtype " + s);
}

[[noreturn]] void bad_header(const std::string& source, const std::string& what) {
  throw std::runtime_error("[load_safetensors] Invalid header in file " + source + ": " + what);
}

}  // namespace

void save_safetensors(std::ostream& out, const std::unordered_map<std::string, array>& arrays,
                      const std::unordered_map<std::string, std::string>& metadata) {
  // Sorted names make the file the same from run to run.
  std::vector<std::string> names;
  for (auto& [k, v] : arrays) names.push_back(k);
  std::sort(names.begin(), names.end());

  std::string header = "{";
  if (!metadata.empty()) {
    std::vector<std::pair<std::string, std::string>> md(metadata.begin(), metadata.end());
    std::sort(md.begin(), md.end());
    header += "\"__metadata__\":{";
    for (size_t i = 0; i < md.size(); ++i) {
      header += (i ? "," : "") + io::json_quote(md[i].first) + ":" + io::json_quote(md[i].second);
    }
    header += "},";
  }
  size_t offset = 0;
  for (auto& name : names) {
    const array& a = arrays.at(name);
    header += io::json_quote(name) + ":{\"dtype\":\"" + name_of(a.dtype()) + "\",\"shape\":[";
    for (int i = 0; i < a.ndim(); ++i) header += (i ? "," : "") + std::to_string(a.shape(i));
    header += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + a.nbytes()) + "]},";
    offset += a.nbytes();
  }
  if (header.size() > 1) header.pop_back();
  header += "}";
  // The reference implementation pads the header with spaces to 8 bytes.
  header.append((8 - header.size() % 8) % 8, ' ');
  io::write_le<uint64_t>(out, header.size());
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  for (auto& name : names) io::write_array(out, arrays.at(name));
  if (!out) throw std::runtime_error("[save_safetensors] writing failed");
}

void save_safetensors(std::string file, const std::unordered_map<std::string, array>& arrays,
                      const std::unordered_map<std::string, std::string>& metadata) {
  file = io::with_extension(std::move(file), ".safetensors");
  auto out = io::open_for_write(file, "save_safetensors");
  save_safetensors(out, arrays, metadata);
}

SafetensorsLoad load_safetensors(std::istream& in, const std::string& source) {
  uint64_t n = 0;
  in.read(reinterpret_cast<char*>(&n), 8);
  // A header larger than 100 MB is what the reference reader rejects too.
  if (in.gcount() != 8 || n == 0 || n > 100'000'000) {
    throw std::runtime_error("[load_safetensors] Invalid json header length file " + source);
  }
  std::string text(n, '\0');
  io::read_exact(in, text.data(), n, "load_safetensors", source);
  io::Json header = io::parse_json(text, "load_safetensors");
  if (header.kind != io::Json::Kind::object) bad_header(source, "not a JSON object");

  struct Entry {
    std::string name;
    Dtype dtype;
    Shape shape;
    uint64_t begin, end;
  };
  std::vector<Entry> entries;
  SafetensorsLoad result;
  for (auto& [name, v] : header.members) {
    if (name == "__metadata__") {
      if (v.kind == io::Json::Kind::null) continue;
      if (v.kind != io::Json::Kind::object) bad_header(source, "__metadata__ is not an object");
      for (auto& [k, s] : v.members) {
        if (s.kind != io::Json::Kind::string) bad_header(source, "metadata value of " + k + " is not a string");
        result.second[k] = s.string;
      }
      continue;
    }
    const io::Json* dt = v.find("dtype");
    const io::Json* sh = v.find("shape");
    const io::Json* off = v.find("data_offsets");
    if (!dt || !sh || !off || dt->kind != io::Json::Kind::string || sh->kind != io::Json::Kind::array ||
        off->kind != io::Json::Kind::array || off->items.size() != 2) {
      bad_header(source, "entry " + name + " lacks dtype, shape or data_offsets");
    }
    Entry e{name, dtype_from_name(dt->string), {}, 0, 0};
    for (auto& d : sh->items) {
      if (!d.is_integer || d.integer < 0) bad_header(source, "bad shape of " + name);
      e.shape.push_back(static_cast<ShapeElem>(d.integer));
    }
    if (!off->items[0].is_integer || !off->items[1].is_integer || off->items[0].integer < 0 ||
        off->items[1].integer < off->items[0].integer) {
      bad_header(source, "bad data_offsets of " + name);
    }
    e.begin = static_cast<uint64_t>(off->items[0].integer);
    e.end = static_cast<uint64_t>(off->items[1].integer);
    if (e.end - e.begin != shape_size(e.shape) * size_of(e.dtype)) {
      bad_header(source, "data_offsets of " + name + " do not match its shape and dtype");
    }
    entries.push_back(std::move(e));
  }
  // Read in file order, so a stream need not seek backwards.
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.begin < b.begin; });
  uint64_t pos = 0;
  for (auto& e : entries) {
    if (e.begin < pos) bad_header(source, "tensors overlap");
    std::vector<char> skip(e.begin - pos);
    io::read_exact(in, skip.data(), skip.size(), "load_safetensors", source);
    result.first.emplace(e.name, io::read_array(in, e.shape, e.dtype, "load_safetensors", source));
    pos = e.end;
  }
  return result;
}

SafetensorsLoad load_safetensors(const std::string& file) {
  auto in = io::open_for_read(file, "load_safetensors");
  return load_safetensors(in, file);
}

}  // namespace alloy
