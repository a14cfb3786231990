#include "msl/features.h"

#include <string_view>
#include <vector>

#include "msl/builtins.h"
#include "msl/token_rules.h"

namespace alloy::msl {
namespace {

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

// The functions of metal_math.h (and the namespaces that re-export them).
constexpr std::string_view kMathNames[] = {
    "abs",    "acos",     "acosh",     "asin",      "asinh",    "atan",    "atan2",  "atanh",   "cbrt",
    "ceil",   "clamp",    "copysign",  "cos",       "cosh",     "cospi",   "degrees", "divide", "erf",
    "erfc",   "exp",      "exp10",     "exp2",      "expm1",    "fabs",    "fdim",   "floor",   "fma",
    "fmax",   "fmax3",    "fmedian3",  "fmin",      "fmin3",    "fmod",    "fract",  "hypot",   "lgamma",
    "log",    "log10",    "log1p",
    "log2",   "mad",      "max",       "max3",      "median3",  "min",     "min3",   "mix",     "nextafter",
    "pow",    "powr",     "radians",   "rint",      "round",    "rsqrt",   "saturate", "sign",  "sin",
    "sinh",   "sinpi",    "smoothstep", "sqrt",     "step",     "tan",     "tanh",   "tanpi",   "tgamma",
    "trunc",  "precise",  "fast"};

// The functions of metal_math_extra.h.
constexpr std::string_view kMathExtraNames[] = {
    "abs_diff", "absdiff",  "add_sat",      "addsat",     "all",          "any",     "clz",
    "cross",    "ctz",      "distance",     "distance_squared", "dot",    "extract_bits", "frexp",
    "hadd",     "ilogb",    "insert_bits",  "isfinite",   "isinf",        "isnan",   "isnormal",
    "ldexp",    "length",   "length_squared", "mad24",    "madhi",        "modf",    "mul24",
    "mulhi",    "normalize", "popcount",    "reverse_bits", "rhadd",      "rotate",  "select",
    "signbit",  "sincos",   "sub_sat",      "subsat",     "isordered",    "isunordered", "madsat",
    "reflect",  "refract",  "faceforward",  "pack_float_to_unorm4x8", "pack_float_to_snorm4x8",
    "pack_float_to_unorm2x16", "pack_float_to_snorm2x16", "pack_float_to_unorm10a2", "pack_half_to_unorm4x8",
    "pack_half_to_snorm4x8", "pack_half_to_unorm2x16", "pack_half_to_snorm2x16", "pack_half_to_unorm10a2",
    "unpack_unorm4x8_to_float", "unpack_snorm4x8_to_float", "unpack_unorm2x16_to_float",
    "unpack_snorm2x16_to_float", "unpack_unorm10a2_to_float", "unpack_unorm4x8_to_half",
    "unpack_snorm4x8_to_half", "unpack_unorm2x16_to_half", "unpack_snorm2x16_to_half",
    "unpack_unorm10a2_to_half", "pack_float_to_srgb_unorm4x8", "pack_half_to_srgb_unorm4x8",
    "unpack_unorm4x8_srgb_to_float", "unpack_unorm4x8_srgb_to_half", "pack_float_to_unorm565", "pack_half_to_unorm565",
    "unpack_unorm565_to_float", "unpack_unorm565_to_half"};

// metal_tensor.h: Metal 4 tensors and the MPP tensor ops (also `tensor<`, and
// `#include <metal_tensor>` or MPP's header). Not `tensor`, `extents` or
// `array` alone: names a kernel may well declare itself.
constexpr std::string_view kTensorNames[] = {"dextents", "tensor_inline", "tensor_handle", "tensor_offset",
                                             "matmul2d", "matmul2d_descriptor", "mpp", "tensor_ops",
                                             "execution_thread", "execution_simdgroup", "execution_simdgroups",
                                             "dynamic_extent", "dynamic_length_v", "tensor_blockwise",
                                             "tensor_plane_scales", "metal_fp8_e4m3_format", "metal_fp8_e5m2_format",
                                             "metal_fp8_ue8m0_format", "metal_fp4_e2m1_format",
                                             "int4b_format", "uint4b_format", "int2b_format", "uint2b_format"};

// `#include <metal_tensor>` or MPP's header.
bool includes_tensor_header(const Token& t) {
  if (t.kind != TokenKind::Directive || directive_name(t) != "include") return false;
  const std::string& d = t.text;
  return d.find("<metal_tensor>") != std::string::npos || d.find("MetalPerformancePrimitives/") != std::string::npos;
}

// MLX's utils.h (mlx_utils.h), and complex64_t, which it includes.
constexpr std::string_view kMlxUtilsNames[] = {"ceildiv",       "Limits",  "elem_to_loc", "complex64_t",
                                               "WorkPerThread", "cast_to", "ConditionalType",
                                               "MLX_MTL_PRAGMA_UNROLL"};

template <std::size_t N>
bool in(const std::string_view (&names)[N], std::string_view s) {
  for (std::string_view n : names)
    if (n == s) return true;
  return false;
}

// A name or type spelling that involves half: `half`, `half4`, `packed_half3`,
// `float16_t`, `simdgroup_half8x8`, `HALF_MAX`, `M_PI_H`.
bool names_half(std::string_view s) {
  if (s.find("half") != std::string_view::npos || s.find("HALF") != std::string_view::npos) return true;
  if (s.find("float16_t") != std::string_view::npos) return true;
  return starts_with(s, "M_") && ends_with(s, "_H");
}

// `float3x3`, `half2x4`, `bfloat4x4`: MSL's matrix names (metal_matrix.h).
bool names_matrix_type(std::string_view s) {
  for (std::string_view e : {"float", "half", "bfloat"})
    if (starts_with(s, e) && s.size() == e.size() + 3 && s[e.size()] >= '2' && s[e.size()] <= '4' &&
        s[e.size() + 1] == 'x' && s[e.size() + 2] >= '2' && s[e.size() + 2] <= '4')
      return true;
  return false;
}

void include_everything(RuntimeFeatures& f) {
  f.half_ops = f.math = f.math_extra = f.fast_math = f.simd = f.atomics = f.matrix = f.mlx_utils = true;
  f.matrices = true;
  f.matrix_elements = true;
  f.lane_state = true;
}

// Scans one of the user's texts (source or header).
void scan(const LexedText& lexed, RuntimeFeatures& f, bool& everything) {
  for (const Token& t : lexed.tokens) {
    // Another header may use anything of the runtime.
    if (t.kind == TokenKind::Directive && directive_name(t) == "include" && !is_metal_include(t.text))
      everything = true;
    if (includes_tensor_header(t)) f.tensor = true;
  }
  const std::vector<Token>& toks = lexed.code;
  for (std::size_t i = 0; i < toks.size(); ++i) {
    const Token& t = toks[i];
    if (t.is_punct("##")) everything = true;  // names built by token pasting are invisible here
    if (t.kind == TokenKind::Number) {
      char last = t.text.empty() ? 0 : t.text.back();
      if (last == 'h' || last == 'H') f.half_ops = true;  // 1.0h
      continue;
    }
    if (t.kind == TokenKind::Identifier && t.text == "thread_elements") f.matrix_elements = true;
    if (t.kind != TokenKind::Identifier || is_member_access(toks, i)) continue;
    std::string_view s = t.text;
    if (names_half(s)) f.half_ops = true;
    if (in(kMathNames, s)) f.math = true;
    if (s == "fast") f.fast_math = true;
    if (in(kMathExtraNames, s)) f.math_extra = true;
    if (in(kTensorNames, s) || (s == "tensor" && i + 1 < toks.size() && toks[i + 1].is_punct("<"))) f.tensor = true;
    if (in(kMlxUtilsNames, s) || starts_with(s, "elem_to_loc")) f.mlx_utils = true;
    if (starts_with(s, "simd_") || starts_with(s, "quad_")) f.simd = true;
    if (s == "simdgroup_barrier") f.lane_state = true;
    if (starts_with(s, "simdgroup_") && s != "simdgroup_barrier" && !find_attribute(s)) f.matrix = true;
    if (s == "make_filled_simdgroup_matrix") f.matrix = true;
    if (names_matrix_type(s) || (s == "matrix" && i + 1 < toks.size() && toks[i + 1].is_punct("<"))) f.matrices = true;
    if (s == "__metal_get_thread_index_in_simdgroup") f.simd = true;  // (the CPU's lane lookup)
    if (is_atomic_name(s)) f.atomics = true;
  }
}

}  // namespace

RuntimeFeatures runtime_features(const KernelSpec& spec, const Analysis& analysis, const LexedKernel& lexed) {
  RuntimeFeatures f;
  bool everything = false;
  scan(lexed.source, f, everything);
  scan(lexed.header, f, everything);
  // An MLX header that includes the tensor header (steel's NAX code) brings
  // the tensor ops, as it does under MLX.
  for (const IncludedFile& inc : lexed.includes)
    for (const Token& t : inc.lexed.tokens) f.tensor = f.tensor || includes_tensor_header(t);
  if (everything) {
    // Not the tensor header: its names (tensor, array, extents) are seen or
    // absent whatever else is in doubt, and would clash with the user's own.
    const bool tensor = f.tensor;
    include_everything(f);
    f.tensor = tensor;
    return f;
  }
  // complex64_t (mlx_utils.h) as a parameter's or template argument's type.
  auto type_needs = [&f](const std::string& type) {
    f.half_ops |= names_half(type);
    f.mlx_utils |= type.find("complex64_t") != std::string::npos;
  };
  for (const ParamSpec& p : spec.inputs) type_needs(p.type);
  for (const ParamSpec& p : spec.outputs) type_needs(p.type);
  for (const TemplateArg& t : spec.template_args)
    if (t.kind == TemplateArg::Type) type_needs(t.value);
  if (analysis.uses_atomics) f.atomics = true;
  // Dependencies between the parts (metal_features.h). Cooperative tensors
  // reduce and gather across a SIMD group.
  if (f.matrix || f.tensor) f.simd = true;
  if (f.simd) f.lane_state = true;
  if (f.simd || f.atomics || f.matrix) f.math = f.half_ops = true;
  if (f.math_extra || f.fast_math) f.math = true;
  if (f.tensor) f.half_ops = true;
  return f;
}

bool is_math_function_name(std::string_view name) { return in(kMathNames, name) || in(kMathExtraNames, name); }

std::string feature_defines(const RuntimeFeatures& f) {
  std::string s = "#define ALLOY_MSL_SELECT 1\n";
  auto use = [&](bool on, const char* part) {
    if (on) s += std::string("#define ALLOY_MSL_USE_") + part + " 1\n";
  };
  use(f.half_ops, "HALF_OPS");
  use(f.math, "MATH");
  use(f.math_extra, "MATH_EXTRA");
  use(f.fast_math, "FAST_MATH");
  use(f.simd, "SIMD");
  use(f.atomics, "ATOMICS");
  use(f.matrix, "MATRIX");
  use(f.matrices, "MATRICES");
  use(f.mlx_utils, "MLX_UTILS");
  use(f.tensor, "TENSOR");
  use(f.lane_state, "LANE_STATE");
  // No lane's elements are named: the matrices may live in mma.sync's layout.
  if (f.matrix && !f.matrix_elements) s += "#define ALLOY_MSL_MATRIX_MMA_LAYOUT 1\n";
  if (f.cpu_coroutines) s += "#define ALLOY_MSL_CPU_COROUTINES 1\n";
  if (f.cpu_regions) s += "#define ALLOY_MSL_CPU_REGIONS 1\n";
  return s;
}

}  // namespace alloy::msl
