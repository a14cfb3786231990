// Argument checks shared by the mx.linalg ops; messages follow MLX's wording
// (all are ValueError there, std::invalid_argument here).
#pragma once

#include <stdexcept>
#include <string>

#include "alloy/array.h"
#include "alloy/dtype.h"

namespace alloy::linalg_detail {

inline void check_ndim(const array& a, const char* op) {
  if (a.ndim() < 2) {
    throw std::invalid_argument(std::string("[") + op + "] Arrays must have >= 2 dimensions. Received array with " +
                                std::to_string(a.ndim()) + " dimensions.");
  }
}

// float32/float64, plus complex64 where the routine has a complex form.
inline void check_dtype(const array& a, const char* op, bool allow_complex) {
  const Dtype d = a.dtype();
  if (d == float32 || d == float64 || (allow_complex && d == complex64)) return;
  throw std::invalid_argument(std::string("[") + op + "] Arrays must have type " +
                              (allow_complex ? "float32, float64 or complex64" : "float32 or float64") +
                              ". Received array with type " + dtype_name(d) + ".");
}

inline void check_square(const array& a, const char* op, const char* what) {
  if (a.shape(-1) != a.shape(-2)) throw std::invalid_argument(std::string("[") + op + "] " + what);
}

// The usual trio: at least 2-D, a LAPACK dtype, square unless `square_msg` is null.
inline void check_matrix(const array& a, const char* op, bool allow_complex, const char* square_msg) {
  check_dtype(a, op, allow_complex);
  check_ndim(a, op);
  if (square_msg) check_square(a, op, square_msg);
}

}  // namespace alloy::linalg_detail
