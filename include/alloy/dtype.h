// Data types: the one table every dtype decision in Alloy is derived from.
#pragma once

#include <complex>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "alloy/types/bfloat16.h"

namespace alloy {

using float16_t = _Float16;
using complex64_t = std::complex<float>;

// The dtype table. Columns: enum name, C++ type, kind, MLX/Python name,
// MSL spelling (as MLX's metal_kernel prints it; see NOTES-msl.md).
// Order matters: it is the enum order and the order Python lists dtypes in.
#define ALLOY_DTYPES(X)                                         \
  X(bool_, bool, Bool, "bool", "bool")                          \
  X(uint8, uint8_t, Unsigned, "uint8", "uint8_t")               \
  X(uint16, uint16_t, Unsigned, "uint16", "uint16_t")           \
  X(uint32, uint32_t, Unsigned, "uint32", "uint32_t")           \
  X(uint64, uint64_t, Unsigned, "uint64", "uint64_t")           \
  X(int8, int8_t, Signed, "int8", "int8_t")                     \
  X(int16, int16_t, Signed, "int16", "int16_t")                 \
  X(int32, int32_t, Signed, "int32", "int32_t")                   \
  X(int64, int64_t, Signed, "int64", "int64_t")                 \
  X(float16, ::alloy::float16_t, Floating, "float16", "float16_t") \
  X(bfloat16, ::alloy::bfloat16_t, Floating, "bfloat16", "bfloat16_t") \
  X(float32, float, Floating, "float32", "float")               \
  X(float64, double, Floating, "float64", "double")             \
  X(complex64, ::alloy::complex64_t, Complex, "complex64", "complex64_t")

enum class DtypeKind : uint8_t { Bool, Unsigned, Signed, Floating, Complex };

enum class Dtype : uint8_t {
#define ALLOY_DTYPE_ENUM(name, type, kind, py, msl) name,
  ALLOY_DTYPES(ALLOY_DTYPE_ENUM)
#undef ALLOY_DTYPE_ENUM
};

inline constexpr int kNumDtypes = 0
#define ALLOY_DTYPE_COUNT(name, ctype, kind, py, msl) +1
    ALLOY_DTYPES(ALLOY_DTYPE_COUNT)
#undef ALLOY_DTYPE_COUNT
    ;

// Shorthand constants, as MLX spells them (alloy::float32 ...).
#define ALLOY_DTYPE_CONST(name, type, kind, py, msl) \
  inline constexpr Dtype name = Dtype::name;
ALLOY_DTYPES(ALLOY_DTYPE_CONST)
#undef ALLOY_DTYPE_CONST

struct DtypeInfo {
  Dtype dtype;
  DtypeKind kind;
  uint8_t size;
  const char* name;      // "float32"
  const char* msl_name;  // "float"
};

const DtypeInfo& dtype_info(Dtype d);
inline size_t size_of(Dtype d) { return dtype_info(d).size; }
inline const char* dtype_name(Dtype d) { return dtype_info(d).name; }
inline DtypeKind kind_of(Dtype d) { return dtype_info(d).kind; }
inline bool is_floating(Dtype d) { return kind_of(d) == DtypeKind::Floating; }
inline bool is_complex(Dtype d) { return kind_of(d) == DtypeKind::Complex; }
inline bool is_inexact(Dtype d) { return is_floating(d) || is_complex(d); }
inline bool is_integral(Dtype d) {
  auto k = kind_of(d);
  return k == DtypeKind::Signed || k == DtypeKind::Unsigned;
}
inline bool is_unsigned(Dtype d) { return kind_of(d) == DtypeKind::Unsigned; }
inline bool is_signed_integer(Dtype d) { return kind_of(d) == DtypeKind::Signed; }

// Parses "float32" (or "float" / "half" style aliases); throws ValueError-style
// std::invalid_argument on an unknown name.
Dtype dtype_from_name(std::string_view name);

// MLX's type promotion.
Dtype promote_types(Dtype a, Dtype b);

// MLX's categories for mx.issubdtype.
enum class DtypeCategory { complexfloating, floating, inexact, signedinteger, unsignedinteger, integer, number, generic };
bool issubdtype(Dtype d, DtypeCategory c);
// A category below another (floating below inexact, number and generic).
bool issubdtype(DtypeCategory c, DtypeCategory parent);

// Compile-time mapping dtype <-> C++ type.
template <Dtype D>
struct dtype_type;
#define ALLOY_DTYPE_TYPE(name, ctype, kind, py, msl) \
  template <>                                         \
  struct dtype_type<Dtype::name> {                    \
    using type = ctype;                               \
  };
ALLOY_DTYPES(ALLOY_DTYPE_TYPE)
#undef ALLOY_DTYPE_TYPE

template <typename T>
struct type_dtype;
#define ALLOY_TYPE_DTYPE(name, ctype, kind, py, msl) \
  template <>                                         \
  struct type_dtype<ctype> {                          \
    static constexpr Dtype value = Dtype::name;      \
  };
ALLOY_DTYPES(ALLOY_TYPE_DTYPE)
#undef ALLOY_TYPE_DTYPE

template <typename T>
inline constexpr Dtype dtype_of = type_dtype<T>::value;

// The single dtype dispatch: calls f(TypeTag<T>{}) with T the C++ type of d.
//   dispatch_dtype(d, [&](auto tag) { using T = typename decltype(tag)::type; ... });
template <typename T>
struct TypeTag {
  using type = T;
};

template <typename F>
decltype(auto) dispatch_dtype(Dtype d, F&& f) {
  switch (d) {
#define ALLOY_DTYPE_CASE(name, ctype, kind, py, msl) \
  case Dtype::name:                                   \
    return f(TypeTag<ctype>{});
    ALLOY_DTYPES(ALLOY_DTYPE_CASE)
#undef ALLOY_DTYPE_CASE
  }
  return f(TypeTag<float>{});  // unreachable
}

}  // namespace alloy
