// .npy: numpy's array file (magic, version, a Python-literal header dict,
// then the raw bytes). Versions 1.0 to 3.0 are read; 1.0 is written unless
// the header needs 2.0's longer length field.
#include <algorithm>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "alloy/io.h"
#include "alloy/ops.h"
#include "io/io_common.h"

namespace alloy {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;

// numpy's type string for each dtype. bfloat16 has none in numpy: MLX
// writes it as two opaque bytes ('<V2') and reads '<V2' back as bfloat16.
std::string descr_of(Dtype d) {
  switch (d) {
    case Dtype::bool_: return "|b1";
    case Dtype::uint8: return "|u1";
    case Dtype::int8: return "|i1";
    case Dtype::uint16: return "<u2";
    case Dtype::uint32: return "<u4";
    case Dtype::uint64: return "<u8";
    case Dtype::int16: return "<i2";
    case Dtype::int32: return "<i4";
    case Dtype::int64: return "<i8";
    case Dtype::float16: return "<f2";
    case Dtype::bfloat16: return "<V2";
    case Dtype::float32: return "<f4";
    case Dtype::float64: return "<f8";
    case Dtype::complex64: return "<c8";
  }
  throw std::invalid_argument("[save] unsupported dtype");
}

// Dtype and byte order from a type string such as '<f4' or '>i2'.
Dtype dtype_of_descr(const std::string& descr, bool& big_endian) {
  auto unsupported = [&] {
    return std::invalid_argument("[load] Unsupported array protocol type-string: " + descr);
  };
  if (descr.size() < 3) throw unsupported();
  char order = descr[0];
  if (order != '<' && order != '>' && order != '|' && order != '=') throw unsupported();
  big_endian = order == '>';
  char kind = descr[1];
  int size = 0;
  try {
    size = std::stoi(descr.substr(2));
  } catch (const std::exception&) {
    throw unsupported();
  }
  switch (kind) {
    case 'b': if (size == 1) return Dtype::bool_; break;
    case 'u':
      if (size == 1) return Dtype::uint8;
      if (size == 2) return Dtype::uint16;
      if (size == 4) return Dtype::uint32;
      if (size == 8) return Dtype::uint64;
      break;
    case 'i':
      if (size == 1) return Dtype::int8;
      if (size == 2) return Dtype::int16;
      if (size == 4) return Dtype::int32;
      if (size == 8) return Dtype::int64;
      break;
    case 'f':
      if (size == 2) return Dtype::float16;
      if (size == 4) return Dtype::float32;
      if (size == 8) return Dtype::float64;
      break;
    case 'c': if (size == 8) return Dtype::complex64; break;
    case 'V': if (size == 2) return Dtype::bfloat16; break;
  }
  throw unsupported();
}

// The text after `key` up to the value's end, from numpy's header literal.
std::string header_value(const std::string& header, const std::string& key, const std::string& source) {
  size_t k = header.find("'" + key + "'");
  if (k == std::string::npos) throw std::runtime_error("[load] Invalid header in file " + source);
  size_t colon = header.find(':', k);
  if (colon == std::string::npos) throw std::runtime_error("[load] Invalid header in file " + source);
  size_t start = header.find_first_not_of(' ', colon + 1);
  if (start == std::string::npos) throw std::runtime_error("[load] Invalid header in file " + source);
  size_t end;
  if (header[start] == '(') {
    end = header.find(')', start);
    if (end == std::string::npos) throw std::runtime_error("[load] Invalid header in file " + source);
    ++end;
  } else if (header[start] == '\'') {
    end = header.find('\'', start + 1);
    if (end == std::string::npos) throw std::runtime_error("[load] Invalid header in file " + source);
    ++end;
  } else {
    end = header.find_first_of(",}", start);
    if (end == std::string::npos) end = header.size();
  }
  return header.substr(start, end - start);
}

Shape parse_shape(const std::string& tuple, const std::string& source) {
  Shape shape;
  std::string inner = tuple.substr(1, tuple.size() - 2);
  std::stringstream ss(inner);
  std::string item;
  while (std::getline(ss, item, ',')) {
    item.erase(std::remove(item.begin(), item.end(), ' '), item.end());
    if (item.empty()) continue;
    try {
      size_t used = 0;
      long long v = std::stoll(item, &used);
      if (used != item.size() || v < 0) throw std::invalid_argument("shape");
      shape.push_back(static_cast<ShapeElem>(v));
    } catch (const std::exception&) {
      throw std::runtime_error("[load] Invalid shape " + tuple + " in file " + source);
    }
  }
  return shape;
}

void byte_swap(array& a) {
  size_t item = a.itemsize();
  if (item == 1) return;
  // complex64 is two float32s, each swapped on its own.
  size_t unit = a.dtype() == Dtype::complex64 ? 4 : item;
  char* p = static_cast<char*>(a.raw_data());
  for (size_t i = 0; i < a.nbytes(); i += unit) std::reverse(p + i, p + i + unit);
}

}  // namespace

void save(std::ostream& out, const array& a) {
  std::string header = "{'descr': '" + descr_of(a.dtype()) + "', 'fortran_order': False, 'shape': (";
  for (auto d : a.shape()) header += std::to_string(d) + ", ";
  if (a.ndim() == 1) header.resize(header.size() - 1);         // "(3,)"
  else if (a.ndim() > 1) header.resize(header.size() - 2);     // "(2, 3)"
  header += "), }";
  // numpy pads the whole preamble to a multiple of 64 bytes, ending in '\n'.
  size_t v1_prefix = kMagicLen + 2 + 2;
  bool v2 = header.size() + 1 + v1_prefix + 64 > 65535;
  size_t prefix = v2 ? kMagicLen + 2 + 4 : v1_prefix;
  size_t total = prefix + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  out.write(kMagic, kMagicLen);
  out.put(static_cast<char>(v2 ? 2 : 1));
  out.put(0);
  if (v2) io::write_le<uint32_t>(out, static_cast<uint32_t>(header.size()));
  else io::write_le<uint16_t>(out, static_cast<uint16_t>(header.size()));
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  io::write_array(out, a);
}

void save(std::string file, const array& a) {
  file = io::with_extension(std::move(file), ".npy");
  auto out = io::open_for_write(file, "save");
  save(out, a);
}

array load(std::istream& in, const std::string& source) {
  char magic[kMagicLen + 2];
  in.read(magic, sizeof(magic));
  if (in.gcount() != static_cast<std::streamsize>(sizeof(magic)) || std::memcmp(magic, kMagic, kMagicLen) != 0) {
    throw std::runtime_error("[load] Invalid header in file " + source);
  }
  int major = magic[kMagicLen];
  size_t header_len;
  if (major == 1) header_len = io::read_le<uint16_t>(in, "load", source);
  else if (major == 2 || major == 3) header_len = io::read_le<uint32_t>(in, "load", source);
  else throw std::runtime_error("[load] Unsupported .npy format version " + std::to_string(major) + " in " + source);
  std::string header(header_len, '\0');
  io::read_exact(in, header.data(), header_len, "load", source);

  std::string descr = header_value(header, "descr", source);
  if (descr.size() < 2 || descr.front() != '\'') {
    // Structured dtypes are written as a list of fields.
    throw std::invalid_argument("[load] Unsupported array protocol type-string: " + descr);
  }
  bool big_endian = false;
  Dtype dtype = dtype_of_descr(descr.substr(1, descr.size() - 2), big_endian);
  bool fortran = header_value(header, "fortran_order", source) == "True";
  std::string shape_text = header_value(header, "shape", source);
  if (shape_text.empty() || shape_text.front() != '(') throw std::runtime_error("[load] Invalid header in file " + source);
  Shape shape = parse_shape(shape_text, source);

  if (!fortran) {
    array a = io::read_array(in, shape, dtype, "load", source);
    if (big_endian) byte_swap(a);
    return a;
  }
  // Column-major data is the row-major data of the reversed shape.
  Shape reversed(shape.rbegin(), shape.rend());
  array a = io::read_array(in, reversed, dtype, "load", source);
  if (big_endian) byte_swap(a);
  return contiguous(transpose(a));
}

array load(const std::string& file) {
  auto in = io::open_for_read(file, "load");
  return load(in, file);
}

}  // namespace alloy
