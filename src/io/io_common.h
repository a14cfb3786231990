// Helpers shared by the file formats: opening files with MLX's messages,
// exact reads that report truncation, and moving array bytes in and out.
#pragma once

#include <fstream>
#include <istream>
#include <ostream>
#include <string>

#include "alloy/array.h"

namespace alloy::io {

// MLX adds the format's extension when the name lacks it.
std::string with_extension(std::string file, const std::string& ext);

std::ofstream open_for_write(const std::string& file, const char* op);
std::ifstream open_for_read(const std::string& file, const char* op);

// Reads exactly n bytes or throws "[op] unexpected end of <source>".
void read_exact(std::istream& in, void* dst, size_t n, const char* op, const std::string& source);

// A fresh evaluated host array whose row-major bytes are read from `in`.
array read_array(std::istream& in, Shape shape, Dtype dtype, const char* op, const std::string& source);

// The row-major bytes of `a` (evaluated, copied to the host when needed).
array host_row_major(const array& a);
void write_array(std::ostream& out, const array& a);

template <typename T>
void write_le(std::ostream& out, T v) {
  // Every format here is little-endian, as is every host Alloy targets.
  out.write(reinterpret_cast<const char*>(&v), sizeof(T));
}

template <typename T>
T read_le(std::istream& in, const char* op, const std::string& source) {
  T v;
  read_exact(in, &v, sizeof(T), op, source);
  return v;
}

}  // namespace alloy::io
