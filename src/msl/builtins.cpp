#include "msl/builtins.h"

#include <array>
#include <cctype>

namespace alloy::msl {
namespace {

constexpr std::array<AttributeInfo, 20> kAttributes = {{
    {"dispatch_quadgroups_per_threadgroup", "uint"},
    {"dispatch_simdgroups_per_threadgroup", "uint"},
    {"dispatch_threads_per_threadgroup", "uint3"},
    {"grid_origin", "uint3"},
    {"grid_size", "uint3"},
    {"quadgroup_index_in_threadgroup", "uint"},
    {"quadgroups_per_threadgroup", "uint"},
    {"simdgroup_index_in_threadgroup", "uint"},
    {"simdgroups_per_threadgroup", "uint"},
    {"thread_execution_width", "uint"},
    {"thread_index_in_quadgroup", "uint"},
    {"thread_index_in_simdgroup", "uint"},
    {"thread_index_in_threadgroup", "uint"},
    {"thread_position_in_grid", "uint3"},
    {"thread_position_in_threadgroup", "uint3"},
    {"threadgroup_position_in_grid", "uint3"},
    {"threadgroups_per_grid", "uint3"},
    {"threads_per_grid", "uint3"},
    {"threads_per_simdgroup", "uint"},
    {"threads_per_threadgroup", "uint3"},
}};

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// Metal's scalar types: the element names that form vector types (`float4`,
// `packed_half3`).
constexpr std::array<ScalarInfo, 12> kVectorScalars = {{{"bool", 1, false},
                                                        {"char", 1, true},
                                                        {"uchar", 1, true},
                                                        {"short", 2, true},
                                                        {"ushort", 2, true},
                                                        {"int", 4, true},
                                                        {"uint", 4, true},
                                                        {"long", 8, true},
                                                        {"ulong", 8, true},
                                                        {"half", 2, false},
                                                        {"float", 4, false},
                                                        {"bfloat", 2, false}}};
// The <stdint.h> and size names kernels also use.
constexpr std::array<ScalarInfo, 10> kOtherScalars = {{{"int8_t", 1, true},
                                                       {"uint8_t", 1, true},
                                                       {"int16_t", 2, true},
                                                       {"uint16_t", 2, true},
                                                       {"int32_t", 4, true},
                                                       {"uint32_t", 4, true},
                                                       {"int64_t", 8, true},
                                                       {"uint64_t", 8, true},
                                                       {"size_t", 8, true},
                                                       {"ptrdiff_t", 8, true}}};

}  // namespace

std::span<const AttributeInfo> metal_attributes() { return kAttributes; }

const AttributeInfo* find_attribute(std::string_view name) {
  for (const AttributeInfo& a : kAttributes)
    if (a.name == name) return &a;
  return nullptr;
}

bool is_sync_function(std::string_view name) {
  if (name == "threadgroup_barrier" || name == "simdgroup_barrier") return true;
  if (starts_with(name, "simd_") || starts_with(name, "quad_")) return true;
  // simdgroup_load/store/multiply/multiply_accumulate and friends; the
  // attribute simdgroup_index_in_threadgroup is not a function.
  return starts_with(name, "simdgroup_") && !find_attribute(name);
}

bool is_awaitable_sync_function(std::string_view name) {
  static constexpr std::array<std::string_view, 26> kSimdGroupFunctions = {
      "sum", "product", "min", "max", "and", "or", "xor",
      "prefix_inclusive_sum", "prefix_exclusive_sum", "prefix_inclusive_product", "prefix_exclusive_product",
      "shuffle", "broadcast", "shuffle_up", "shuffle_down", "shuffle_xor", "shuffle_rotate_up",
      "shuffle_rotate_down", "shuffle_and_fill_up", "shuffle_and_fill_down", "broadcast_first", "is_first",
      "all", "any", "ballot", "active_threads_mask"};
  if (name == "threadgroup_barrier" || name == "simdgroup_barrier") return true;
  std::string_view rest;
  if (starts_with(name, "simd_")) rest = name.substr(5);
  else if (starts_with(name, "quad_")) rest = name.substr(5);
  else return false;
  for (std::string_view f : kSimdGroupFunctions)
    if (rest == f) return true;
  return false;
}

bool is_region_matrix_product(std::string_view name) {
  return name == "simdgroup_multiply_accumulate" || name == "simdgroup_multiply";
}

bool is_region_matrix_name(std::string_view name) {
  if (is_region_matrix_product(name)) return true;
  if (name == "simdgroup_load" || name == "simdgroup_store" || name == "make_filled_simdgroup_matrix" ||
      name == "simdgroup_matrix")
    return true;
  return starts_with(name, "simdgroup_") && name.find("8x8") != std::string_view::npos;  // simdgroup_float8x8
}

bool is_sync_name(std::string_view name) {
  // A tensor op at a SIMD-group scope deals its rows over the scope's threads.
  if (name == "execution_simdgroup" || name == "execution_simdgroups") return true;
  // Apple's builtin for the lane (MLX's NAX headers): the CPU must know it.
  if (name == "__metal_get_thread_index_in_simdgroup") return true;
  return name == "simdgroup_matrix" ||
         (starts_with(name, "simdgroup_") && (name.find("8x8") != std::string_view::npos));
}

bool is_atomic_name(std::string_view name) {
  return name == "atomic" || starts_with(name, "atomic_");
}

std::optional<std::string> invalid_vector_type(std::string_view name) {
  std::string_view rest = name;
  if (starts_with(rest, "packed_")) rest.remove_prefix(7);
  for (const ScalarInfo& info : kVectorScalars) {
    const std::string_view scalar = info.name;
    if (!starts_with(rest, scalar)) continue;
    std::string_view tail = rest.substr(scalar.size());
    if (tail.empty() || !std::isdigit(static_cast<unsigned char>(tail[0]))) continue;
    std::size_t i = 0;
    while (i < tail.size() && std::isdigit(static_cast<unsigned char>(tail[i]))) ++i;
    std::string_view n = tail.substr(0, i);
    std::string_view after = tail.substr(i);
    std::string_view m;
    if (!after.empty()) {
      // `float2x3` is a matrix; anything else after the digits is a plain name.
      if (after[0] != 'x' || after.size() < 2) return std::nullopt;
      m = after.substr(1);
      for (char c : m)
        if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    }
    // int8, uint16, ... read as bit widths: user names, not vectors.
    if (m.empty() && info.integer &&
        (n == "8" || n == "16" || n == "32" || n == "64"))
      return std::nullopt;
    auto ok = [](std::string_view w) { return w == "2" || w == "3" || w == "4"; };
    if (ok(n) && (m.empty() || ok(m))) return std::nullopt;
    if (m.empty())
      return "invalid vector type '" + std::string(name) + "': Metal vectors have 2, 3 or 4 " +
             "components, not " + std::string(n);
    return "invalid matrix type '" + std::string(name) + "': Metal matrices have 2, 3 or 4 " +
           "columns and rows, not " + std::string(n) + "x" + std::string(m);
  }
  return std::nullopt;
}

std::optional<unsigned> metal_type_alignment(std::string_view name) {
  if (const ScalarInfo* s = find_scalar_type(name)) return s->size;
  std::string_view rest = name;
  const bool packed = starts_with(rest, "packed_");
  if (packed) rest.remove_prefix(7);
  for (const ScalarInfo& s : kVectorScalars) {
    if (!starts_with(rest, s.name) || rest.size() < s.name.size() + 1) continue;
    const char n = rest[s.name.size()];
    std::string_view after = rest.substr(s.name.size() + 1);
    if (n < '2' || n > '4') continue;
    // A vector, or a matrix `<s><columns>x<rows>` whose columns are vectors of `rows`.
    unsigned width = n - '0';
    if (!after.empty()) {
      if (packed || after.size() != 2 || after[0] != 'x' || after[1] < '2' || after[1] > '4') continue;
      width = after[1] - '0';
    }
    if (packed) return s.size;
    return s.size * (width == 3 ? 4 : width);
  }
  return std::nullopt;
}

const ScalarInfo* find_scalar_type(std::string_view name) {
  for (const ScalarInfo& s : kVectorScalars)
    if (s.name == name) return &s;
  for (const ScalarInfo& s : kOtherScalars)
    if (s.name == name) return &s;
  return nullptr;
}

bool is_vector_type_name(std::string_view name) {
  for (const ScalarInfo& s : kVectorScalars)
    if (name.size() == s.name.size() + 1 && starts_with(name, s.name) && name.back() >= '2' && name.back() <= '4')
      return true;
  return false;
}

bool is_metal_include(std::string_view d) {
  std::size_t i = 1;
  auto skip = [&] {
    while (i < d.size() && (d[i] == ' ' || d[i] == '\t')) ++i;
  };
  skip();
  if (d.substr(i, 7) != "include") return false;
  i += 7;
  skip();
  if (i >= d.size() || (d[i] != '<' && d[i] != '"')) return false;
  std::string_view path = d.substr(i + 1);
  return starts_with(path, "metal_") || starts_with(path, "MetalPerformancePrimitives/");
}

}  // namespace alloy::msl
