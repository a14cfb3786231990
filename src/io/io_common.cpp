#include "io/io_common.h"

#include <stdexcept>

#include "alloy/ops.h"

namespace alloy::io {

std::string with_extension(std::string file, const std::string& ext) {
  if (file.size() < ext.size() || file.compare(file.size() - ext.size(), ext.size(), ext) != 0) file += ext;
  return file;
}

std::ofstream open_for_write(const std::string& file, const char* op) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error(std::string("[") + op + "] Failed to open file " + file);
  return out;
}

std::ifstream open_for_read(const std::string& file, const char* op) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw std::runtime_error(std::string("[") + op + "] Failed to open file " + file);
  return in;
}

void read_exact(std::istream& in, void* dst, size_t n, const char* op, const std::string& source) {
  if (n == 0) return;
  in.read(static_cast<char*>(dst), static_cast<std::streamsize>(n));
  if (static_cast<size_t>(in.gcount()) != n) {
    throw std::runtime_error(std::string("[") + op + "] Unexpected end of file in " + source);
  }
}

array read_array(std::istream& in, Shape shape, Dtype dtype, const char* op, const std::string& source) {
  size_t bytes = shape_size(shape) * size_of(dtype);
  auto data = std::make_shared<Data>(allocator(Device(Device::cpu)).malloc(bytes));
  read_exact(in, data->buffer.ptr, bytes, op, source);
  Strides strides = row_major_strides(shape);
  return array(std::move(data), std::move(shape), std::move(strides), dtype);
}

array host_row_major(const array& a) {
  array c = a;
  c.eval();  // layout flags are known only once evaluated
  if (!c.flags().row_contiguous) c = contiguous(c);
  return to_host(c);
}

void write_array(std::ostream& out, const array& a) {
  array h = host_row_major(a);
  out.write(static_cast<const char*>(h.raw_data()), static_cast<std::streamsize>(h.nbytes()));
  if (!out) throw std::runtime_error("[save] writing the array's data failed");
}

}  // namespace alloy::io
