// .gguf (version 3): a header of typed key-value metadata and tensor
// descriptions, then the tensors' bytes aligned to `general.alignment`.
// Dimensions are stored innermost first, the reverse of a row-major shape.
#include <algorithm>
#include <stdexcept>

#include "alloy/io.h"
#include "io/io_common.h"

namespace alloy {
namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32
constexpr uint32_t kVersion = 3;
constexpr uint64_t kDefaultAlignment = 32;

// Metadata value types of the format.
enum ValueType : uint32_t {
  kU8 = 0, kI8 = 1, kU16 = 2, kI16 = 3, kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7,
  kString = 8, kArray = 9, kU64 = 10, kI64 = 11, kF64 = 12,
};

// ggml tensor types Alloy reads; quantized blocks are not read.
enum TensorType : uint32_t { kTF32 = 0, kTF16 = 1, kTI8 = 24, kTI16 = 25, kTI32 = 26, kTI64 = 27, kTF64 = 28, kTBF16 = 30 };

uint32_t tensor_type_of(Dtype d) {
  // The types MLX writes; the others have no agreed ggml spelling in MLX.
  switch (d) {
    case Dtype::float32: return kTF32;
    case Dtype::float16: return kTF16;
    case Dtype::int8: return kTI8;
    case Dtype::int16: return kTI16;
    case Dtype::int32: return kTI32;
    default: throw std::runtime_error(std::string("[save_gguf] dtype ") + dtype_name(d) + " is not supported");
  }
}

Dtype dtype_of_tensor_type(uint32_t t, const std::string& name) {
  switch (t) {
    case kTF32: return Dtype::float32;
    case kTF16: return Dtype::float16;
    case kTBF16: return Dtype::bfloat16;
    case kTF64: return Dtype::float64;
    case kTI8: return Dtype::int8;
    case kTI16: return Dtype::int16;
    case kTI32: return Dtype::int32;
    case kTI64: return Dtype::int64;
    default:
      throw std::runtime_error("[load_gguf] tensor " + name + " has ggml type " + std::to_string(t) +
                               ", which Alloy does not read (quantized GGUF tensors are not supported)");
  }
}

uint32_t value_type_of(Dtype d) {
  switch (d) {
    case Dtype::uint8: return kU8;
    case Dtype::int8: return kI8;
    case Dtype::uint16: return kU16;
    case Dtype::int16: return kI16;
    case Dtype::uint32: return kU32;
    case Dtype::int32: return kI32;
    case Dtype::float32: return kF32;
    case Dtype::bool_: return kBool;
    case Dtype::uint64: return kU64;
    case Dtype::int64: return kI64;
    case Dtype::float64: return kF64;
    default: throw std::runtime_error(std::string("[save_gguf] metadata of dtype ") + dtype_name(d) + " is not supported");
  }
}

Dtype dtype_of_value_type(uint32_t t, const std::string& source) {
  switch (t) {
    case kU8: return Dtype::uint8;
    case kI8: return Dtype::int8;
    case kU16: return Dtype::uint16;
    case kI16: return Dtype::int16;
    case kU32: return Dtype::uint32;
    case kI32: return Dtype::int32;
    case kF32: return Dtype::float32;
    case kBool: return Dtype::bool_;
    case kU64: return Dtype::uint64;
    case kI64: return Dtype::int64;
    case kF64: return Dtype::float64;
    default: throw std::runtime_error("[load_gguf] bad metadata value type " + std::to_string(t) + " in " + source);
  }
}

void write_string(std::ostream& out, const std::string& s) {
  io::write_le<uint64_t>(out, s.size());
  out.write(s.data(), static_cast<std::streamsize>(s.size()));
}

std::string read_string(std::istream& in, const std::string& source) {
  uint64_t n = io::read_le<uint64_t>(in, "load_gguf", source);
  if (n > (1ull << 32)) throw std::runtime_error("[load_gguf] implausible string length in " + source);
  std::string s(n, '\0');
  io::read_exact(in, s.data(), n, "load_gguf", source);
  return s;
}

void write_padding(std::ostream& out, uint64_t pos, uint64_t alignment) {
  uint64_t pad = (alignment - pos % alignment) % alignment;
  for (uint64_t i = 0; i < pad; ++i) out.put(0);
}

void write_metadata(std::ostream& out, const std::string& key, const GGUFMetaData& value) {
  if (std::holds_alternative<std::monostate>(value)) return;
  write_string(out, key);
  if (auto* s = std::get_if<std::string>(&value)) {
    io::write_le<uint32_t>(out, kString);
    write_string(out, *s);
  } else if (auto* list = std::get_if<std::vector<std::string>>(&value)) {
    io::write_le<uint32_t>(out, kArray);
    io::write_le<uint32_t>(out, kString);
    io::write_le<uint64_t>(out, list->size());
    for (auto& s : *list) write_string(out, s);
  } else {
    const array& a = std::get<array>(value);
    uint32_t type = value_type_of(a.dtype());
    array h = io::host_row_major(a);
    if (a.ndim() == 0) {
      io::write_le<uint32_t>(out, type);
    } else {
      io::write_le<uint32_t>(out, kArray);
      io::write_le<uint32_t>(out, type);
      io::write_le<uint64_t>(out, a.size());
    }
    out.write(static_cast<const char*>(h.raw_data()), static_cast<std::streamsize>(h.nbytes()));
  }
}

GGUFMetaData read_value(std::istream& in, uint32_t type, const std::string& source) {
  if (type == kString) return read_string(in, source);
  if (type != kArray) return io::read_array(in, {}, dtype_of_value_type(type, source), "load_gguf", source);
  uint32_t elem = io::read_le<uint32_t>(in, "load_gguf", source);
  uint64_t n = io::read_le<uint64_t>(in, "load_gguf", source);
  if (elem == kString) {
    std::vector<std::string> list;
    for (uint64_t i = 0; i < n; ++i) list.push_back(read_string(in, source));
    return list;
  }
  if (elem == kArray) throw std::runtime_error("[load_gguf] nested metadata arrays are not supported (" + source + ")");
  return io::read_array(in, {static_cast<ShapeElem>(n)}, dtype_of_value_type(elem, source), "load_gguf", source);
}

}  // namespace

void save_gguf(std::ostream& out, const std::unordered_map<std::string, array>& arrays,
               const std::unordered_map<std::string, GGUFMetaData>& metadata) {
  // Check everything before writing a byte.
  for (auto& [k, v] : metadata) {
    if (auto* a = std::get_if<array>(&v)) {
      if (a->ndim() > 1) throw std::runtime_error("[save_gguf] Cannot save arrays with more than one dimension.");
      if (a->size() == 0) throw std::runtime_error("[save_gguf] Cannot save empty arrays.");
      value_type_of(a->dtype());
    }
  }
  std::vector<std::string> names;
  for (auto& [k, a] : arrays) {
    tensor_type_of(a.dtype());
    names.push_back(k);
  }
  std::sort(names.begin(), names.end());
  std::vector<std::string> keys;
  for (auto& [k, v] : metadata) {
    if (!std::holds_alternative<std::monostate>(v)) keys.push_back(k);
  }
  std::sort(keys.begin(), keys.end());

  std::streampos start = out.tellp();
  io::write_le<uint32_t>(out, kMagic);
  io::write_le<uint32_t>(out, kVersion);
  io::write_le<uint64_t>(out, names.size());
  io::write_le<uint64_t>(out, keys.size());
  for (auto& k : keys) write_metadata(out, k, metadata.at(k));
  uint64_t offset = 0;
  for (auto& name : names) {
    const array& a = arrays.at(name);
    write_string(out, name);
    const Shape& dims = a.shape();
    io::write_le<uint32_t>(out, static_cast<uint32_t>(dims.size()));
    for (auto it = dims.rbegin(); it != dims.rend(); ++it) io::write_le<uint64_t>(out, static_cast<uint64_t>(*it));
    io::write_le<uint32_t>(out, tensor_type_of(a.dtype()));
    io::write_le<uint64_t>(out, offset);
    offset += a.nbytes();
    offset += (kDefaultAlignment - offset % kDefaultAlignment) % kDefaultAlignment;
  }
  write_padding(out, static_cast<uint64_t>(out.tellp() - start), kDefaultAlignment);
  for (auto& name : names) {
    const array& a = arrays.at(name);
    io::write_array(out, a);
    write_padding(out, a.nbytes(), kDefaultAlignment);
  }
  if (!out) throw std::runtime_error("[save_gguf] writing failed");
}

void save_gguf(std::string file, const std::unordered_map<std::string, array>& arrays,
               const std::unordered_map<std::string, GGUFMetaData>& metadata) {
  file = io::with_extension(std::move(file), ".gguf");
  auto out = io::open_for_write(file, "save_gguf");
  save_gguf(out, arrays, metadata);
}

GGUFLoad load_gguf(std::istream& in, const std::string& source) {
  uint32_t magic = 0;
  in.read(reinterpret_cast<char*>(&magic), 4);
  if (in.gcount() != 4 || magic != kMagic) throw std::runtime_error("[load_gguf] " + source + " is not a GGUF file");
  uint32_t version = io::read_le<uint32_t>(in, "load_gguf", source);
  if (version < 2 || version > 3) {
    throw std::runtime_error("[load_gguf] unsupported GGUF version " + std::to_string(version) + " in " + source);
  }
  uint64_t n_tensors = io::read_le<uint64_t>(in, "load_gguf", source);
  uint64_t n_kv = io::read_le<uint64_t>(in, "load_gguf", source);
  GGUFLoad result;
  uint64_t alignment = kDefaultAlignment;
  uint64_t pos = 24;
  auto track = [&] { pos = static_cast<uint64_t>(in.tellg()); };
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key = read_string(in, source);
    uint32_t type = io::read_le<uint32_t>(in, "load_gguf", source);
    GGUFMetaData v = read_value(in, type, source);
    if (key == "general.alignment" && type == kU32) {
      alignment = std::get<array>(v).item<uint32_t>();
      if (alignment == 0) throw std::runtime_error("[load_gguf] general.alignment is 0 in " + source);
    }
    result.second[key] = std::move(v);
  }
  struct Info {
    std::string name;
    Shape shape;
    Dtype dtype;
    uint64_t offset;
  };
  std::vector<Info> infos;
  for (uint64_t i = 0; i < n_tensors; ++i) {
    Info t;
    t.name = read_string(in, source);
    uint32_t n_dims = io::read_le<uint32_t>(in, "load_gguf", source);
    if (n_dims > 8) throw std::runtime_error("[load_gguf] tensor " + t.name + " has too many dimensions");
    for (uint32_t d = 0; d < n_dims; ++d) t.shape.push_back(static_cast<ShapeElem>(io::read_le<uint64_t>(in, "load_gguf", source)));
    std::reverse(t.shape.begin(), t.shape.end());
    t.dtype = dtype_of_tensor_type(io::read_le<uint32_t>(in, "load_gguf", source), t.name);
    t.offset = io::read_le<uint64_t>(in, "load_gguf", source);
    infos.push_back(std::move(t));
  }
  track();
  // The tensor data starts at the next multiple of the alignment.
  uint64_t data_start = pos + (alignment - pos % alignment) % alignment;
  std::sort(infos.begin(), infos.end(), [](const Info& a, const Info& b) { return a.offset < b.offset; });
  uint64_t cursor = pos;
  for (auto& t : infos) {
    uint64_t at = data_start + t.offset;
    if (at < cursor) throw std::runtime_error("[load_gguf] tensors overlap in " + source);
    std::vector<char> skip(at - cursor);
    io::read_exact(in, skip.data(), skip.size(), "load_gguf", source);
    array a = io::read_array(in, t.shape, t.dtype, "load_gguf", source);
    cursor = at + a.nbytes();
    result.first.emplace(t.name, std::move(a));
  }
  return result;
}

GGUFLoad load_gguf(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  // MLX reports a GGUF file it cannot open as a ValueError.
  if (!in) throw std::invalid_argument("[load_gguf] Failed to open " + file);
  return load_gguf(in, file);
}

}  // namespace alloy
