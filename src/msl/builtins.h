// The Metal names the front end knows about: one table per question.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace alloy::msl {

struct AttributeInfo {
  std::string_view name;  // also the kernel parameter's name
  std::string_view type;  // "uint3" or "uint"
};

// The 20 attributes MLX recognises, in MLX's order (the order of the
// parameters it generates).
std::span<const AttributeInfo> metal_attributes();
const AttributeInfo* find_attribute(std::string_view name);

// Whether an identifier that is called (`name(`) is a function that needs
// the threadgroup's threads to run together: barriers, simd_*/quad_*
// functions, simdgroup_matrix operations.
bool is_sync_function(std::string_view name);
// The sync functions the CPU target can run on coroutine threads (barriers
// and the simd_/quad_ SIMD-group functions, whose runtime forms return an
// awaiter there); simdgroup matrix operations are not among them.
bool is_awaitable_sync_function(std::string_view name);
// The simdgroup matrix operations a kernel split into regions runs
// (cpu_regions.h): the products, an exchange between the lanes like a
// simd_ function's (`collective`), and the per-lane ones, which read only
// the lane's own elements (loads, stores, fills, the diagonal constructor,
// the matrix types).
bool is_region_matrix_product(std::string_view name);
bool is_region_matrix_name(std::string_view name);
// Whether an identifier is a type that needs the threads together wherever
// it appears: the simdgroup matrix types, the SIMD-group execution scopes. (`threadgroup` counts only where it
// declares storage: see declares_threadgroup_storage.)
bool is_sync_name(std::string_view name);
// Whether an identifier names an atomic type or function.
bool is_atomic_name(std::string_view name);

// Metal's scalar types (`float`, `uint`, `bfloat`) and the <stdint.h> and
// size names kernels also use (`int32_t`, `size_t`): size (= alignment) and
// whether each is an integer. nullptr for any other name.
struct ScalarInfo {
  std::string_view name;
  unsigned size;
  bool integer;
};
const ScalarInfo* find_scalar_type(std::string_view name);

// For `<scalar><N>`, `packed_<scalar><N>` and `<scalar><N>x<M>` spellings
// with a width outside 2..4, the reason they are invalid; nullopt for every
// other identifier (including int8/uint16/... bit-width lookalikes).
std::optional<std::string> invalid_vector_type(std::string_view name);

// The alignment Metal gives a scalar, vector or matrix type named `name`
// (`float4`: 16, `packed_float4` and `half4`: 4 and 8, `float2x4`: 16, the
// <stdint.h> names); nullopt for any other name (a user's type).
std::optional<unsigned> metal_type_alignment(std::string_view name);

// `float4`, `half2`, `uint3`: a vector type (not packed_, not a matrix),
// whose alignment is its size (a 3-vector's, a 4-vector's) rather than its
// element's.
bool is_vector_type_name(std::string_view name);

// `#include <metal_stdlib>` and the other `<metal_*>` headers, and Metal
// Performance Primitives' `<MetalPerformancePrimitives/...>`.
bool is_metal_include(std::string_view directive_text);

}  // namespace alloy::msl
