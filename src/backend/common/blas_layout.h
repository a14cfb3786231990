// How a BLAS (OpenBLAS on the CPU, cuBLAS on the GPU) can read the trailing
// (R, C) matrices of an array in place. Host code; both backends' matmul.
#pragma once

#include <algorithm>
#include <cstdint>

#include "alloy/array.h"

namespace alloy {

// Row-major with leading dimension `ld` (trans = false), or column-major
// (trans = true); false if neither, and the caller copies.
inline bool blas_layout(const array& in, int64_t& ld, bool& trans) {
  const int nd = in.ndim();
  const int64_t R = in.shape(nd - 2), C = in.shape(nd - 1);
  const int64_t sr = in.strides()[nd - 2], sc = in.strides()[nd - 1];
  if ((sc == 1 || C == 1) && (R == 1 || sr >= std::max<int64_t>(C, 1))) {
    trans = false;
    ld = R == 1 ? std::max<int64_t>(C, 1) : sr;
    return true;
  }
  if ((sr == 1 || R == 1) && (C == 1 || sc >= std::max<int64_t>(R, 1))) {
    trans = true;
    ld = C == 1 ? std::max<int64_t>(R, 1) : sc;
    return true;
  }
  return false;
}

}  // namespace alloy
