#include "alloy/dtype.h"

#include <stdexcept>
#include <string>

namespace alloy {

namespace {
constexpr DtypeInfo kDtypeTable[] = {
#define ALLOY_DTYPE_ROW(name, type, kind, py, msl) \
  {Dtype::name, DtypeKind::kind, static_cast<uint8_t>(sizeof(type)), py, msl},
    ALLOY_DTYPES(ALLOY_DTYPE_ROW)
#undef ALLOY_DTYPE_ROW
};
static_assert(sizeof(kDtypeTable) / sizeof(kDtypeTable[0]) == kNumDtypes);
}  // namespace

const DtypeInfo& dtype_info(Dtype d) { return kDtypeTable[static_cast<int>(d)]; }

Dtype dtype_from_name(std::string_view name) {
  for (const auto& row : kDtypeTable) {
    if (name == row.name || name == row.msl_name) return row.dtype;
  }
  if (name == "half") return Dtype::float16;
  if (name == "bfloat") return Dtype::bfloat16;
  if (name == "int32_t") return Dtype::int32;
  throw std::invalid_argument("[dtype] unknown dtype name '" + std::string(name) + "'.");
}

Dtype promote_types(Dtype a, Dtype b) {
  if (a == b) return a;
  auto ka = kind_of(a), kb = kind_of(b);
  if (ka == DtypeKind::Bool) return b;
  if (kb == DtypeKind::Bool) return a;
  if (ka == DtypeKind::Complex || kb == DtypeKind::Complex) return Dtype::complex64;
  bool fa = ka == DtypeKind::Floating, fb = kb == DtypeKind::Floating;
  if (fa && fb) {
    if (a == Dtype::float64 || b == Dtype::float64) return Dtype::float64;
    // float16 with bfloat16 has no common 16-bit type.
    if (size_of(a) == size_of(b)) return Dtype::float32;
    return size_of(a) > size_of(b) ? a : b;
  }
  if (fa) return a;  // integer with a float: the float type
  if (fb) return b;
  // Two integers.
  if (ka == kb) return size_of(a) >= size_of(b) ? a : b;
  Dtype u = ka == DtypeKind::Unsigned ? a : b;
  Dtype s = ka == DtypeKind::Unsigned ? b : a;
  if (size_of(s) > size_of(u)) return s;
  switch (size_of(u)) {
    case 1: return Dtype::int16;
    case 2: return Dtype::int32;
    case 4: return Dtype::int64;
    default: return Dtype::float32;  // uint64 with a signed integer, as MLX
  }
}

bool issubdtype(Dtype d, DtypeCategory c) {
  auto k = kind_of(d);
  switch (c) {
    case DtypeCategory::complexfloating: return k == DtypeKind::Complex;
    case DtypeCategory::floating: return k == DtypeKind::Floating;
    case DtypeCategory::inexact: return k == DtypeKind::Floating || k == DtypeKind::Complex;
    case DtypeCategory::signedinteger: return k == DtypeKind::Signed;
    case DtypeCategory::unsignedinteger: return k == DtypeKind::Unsigned;
    case DtypeCategory::integer: return k == DtypeKind::Signed || k == DtypeKind::Unsigned;
    case DtypeCategory::number: return k != DtypeKind::Bool;
    case DtypeCategory::generic: return true;
  }
  return false;
}

bool issubdtype(DtypeCategory c, DtypeCategory parent) {
  switch (parent) {
    case DtypeCategory::generic: return true;
    case DtypeCategory::number: return c != DtypeCategory::generic;
    case DtypeCategory::inexact:
      return c == parent || c == DtypeCategory::floating || c == DtypeCategory::complexfloating;
    case DtypeCategory::integer:
      return c == parent || c == DtypeCategory::signedinteger || c == DtypeCategory::unsignedinteger;
    default: return c == parent;
  }
}

}  // namespace alloy
