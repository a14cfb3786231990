// MLX's dtypes and Alloy's: the same list under the same names, so the
// table is Alloy's dtype table read twice.
#pragma once

#include <stdexcept>

#include "alloy/dtype.h"
#include "mlx/dtype.h"

namespace alloy::mlx {

inline Dtype to_alloy(::mlx::core::Dtype d) {
  switch (d.val()) {
#define ALLOY_MLX_TO_ALLOY(name, type, kind, py, msl) \
  case ::mlx::core::Dtype::Val::name:                 \
    return Dtype::name;
    ALLOY_DTYPES(ALLOY_MLX_TO_ALLOY)
#undef ALLOY_MLX_TO_ALLOY
  }
  throw std::invalid_argument("[metal_kernel] a dtype Alloy does not know.");
}

inline ::mlx::core::Dtype to_mlx(Dtype d) {
  switch (d) {
#define ALLOY_MLX_TO_MLX(name, type, kind, py, msl) \
  case Dtype::name:                                 \
    return ::mlx::core::name;
    ALLOY_DTYPES(ALLOY_MLX_TO_MLX)
#undef ALLOY_MLX_TO_MLX
  }
  throw std::invalid_argument("[metal_kernel] a dtype MLX does not know.");
}

}  // namespace alloy::mlx
