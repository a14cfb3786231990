// Kernels the front-end tests translate: the seed documents' kernels as
// users wrote them (read from examples/seeds), and kernels that exercise one
// feature each.
#pragma once

#include <string>
#include <vector>

#include "../common/seed_sources.h"
#include "alloy/msl/translate.h"

namespace alloy::msl::test {

inline ParamSpec param(std::string name, std::string type) {
  ParamSpec p;
  p.name = std::move(name);
  p.type = std::move(type);
  return p;
}

inline TemplateArg type_arg(std::string name, std::string value) {
  return {std::move(name), TemplateArg::Type, std::move(value)};
}

// A kernel named "k" with the given body, header and parameters: what most
// single-feature tests translate.
inline KernelSpec kernel(std::string source, std::string header = "",
                         std::vector<ParamSpec> inputs = {param("inp", "float")},
                         std::vector<ParamSpec> outputs = {param("out", "float")}) {
  KernelSpec s;
  s.name = "k";
  s.inputs = std::move(inputs);
  s.outputs = std::move(outputs);
  s.source = std::move(source);
  s.header = std::move(header);
  return s;
}

// Seed 002, "Simple Example": the body exactly as the page writes it.
inline KernelSpec myexp(const std::string& in_type = "float16_t",
                        const std::string& t = "float") {
  KernelSpec s;
  s.name = "myexp";
  s.inputs = {param("inp", in_type)};
  s.outputs = {param("out", in_type)};
  s.template_args = {type_arg("T", t)};
  s.source = alloy_test::seed_source("exp_elementwise.py");
  return s;
}

// Seed 002, "Using Shape/Strides".
inline KernelSpec myexp_strided() {
  KernelSpec s;
  s.name = "myexp_strided";
  s.inputs = {param("inp", "float")};
  s.outputs = {param("out", "float")};
  s.template_args = {type_arg("T", "float")};
  s.source = alloy_test::seed_source("exp_strided.py");
  return s;
}

// Seed 002, grid_sample forward.
inline KernelSpec grid_sample() {
  KernelSpec s;
  s.name = "grid_sample";
  s.inputs = {param("x", "float"), param("grid", "float")};
  s.outputs = {param("out", "float")};
  s.template_args = {type_arg("T", "float")};
  s.source = alloy_test::seed_source("grid_sample.py", 0);
  return s;
}

// Seed 002, grid_sample VJP: atomics and a SIMD-group reduction.
inline KernelSpec grid_sample_grad() {
  KernelSpec s;
  s.name = "grid_sample_grad";
  s.inputs = {param("x", "float"), param("grid", "float"), param("cotangent", "float")};
  s.outputs = {param("x_grad", "float"), param("grid_grad", "float")};
  s.template_args = {type_arg("T", "float")};
  s.atomic_outputs = true;
  s.source = alloy_test::seed_source("grid_sample.py", 1);
  return s;
}

// Threadgroup arrays (1-D and 2-D, sized by a template int and a #define),
// barriers, a threadgroup pointer and a threadgroup cast.
inline KernelSpec threadgroup_reduce() {
  KernelSpec s;
  s.name = "tg_reduce";
  s.inputs = {param("inp", "float")};
  s.outputs = {param("out", "float")};
  s.template_args = {type_arg("T", "float"), {"N", TemplateArg::Int, "256"}};
  s.source = R"(
    #define TILE 32
    threadgroup T partial[N];
    threadgroup float tile[TILE][TILE + 1];
    uint lid = thread_position_in_threadgroup.x;
    uint gid = thread_position_in_grid.x;
    partial[lid] = inp[gid];
    tile[lid % TILE][lid / TILE] = 0.0f;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    threadgroup T* p = partial;
    for (uint s = threads_per_threadgroup.x / 2; s > 0; s /= 2) {
        if (lid < s) p[lid] += p[lid + s];
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    if (lid == 0) {
        out[threadgroup_position_in_grid.x] = ((threadgroup T*)partial)[0];
    }
)";
  return s;
}

// Swizzle reads and writes on vectors, single components, rgba names.
inline KernelSpec swizzles() {
  KernelSpec s;
  s.name = "swizzles";
  s.inputs = {param("inp", "float")};
  s.outputs = {param("out", "float")};
  s.source = R"(
    uint i = thread_position_in_grid.x;
    float4 v = float4(inp[4 * i], inp[4 * i + 1], inp[4 * i + 2], inp[4 * i + 3]);
    float2 lo = v.xy;
    v.zw = lo.yx;
    v.xy += float2(1.0f, 2.0f);
    float4 c = v.bgra;
    c.rgb *= 0.5f;
    float3 t = c.xyz;
    v.x = t.z + c.a;
    device float4* o = (device float4*)out;
    o[i] = v.wzyx;
)";
  return s;
}

// Half literals in every spelling.
inline KernelSpec half_literals() {
  KernelSpec s;
  s.name = "half_literals";
  s.inputs = {param("inp", "float16_t")};
  s.outputs = {param("out", "float16_t")};
  s.source = R"(
    uint i = thread_position_in_grid.x;
    half a = 1.0h;
    half b = 0.5H * inp[i] + .25h - 1e-2h;
    half2 v = half2(2.0h, -3.5h);
    out[i] = a + b + v.x * v.y + 1.0f;
)";
  return s;
}

// A header with metal includes, program-scope constants, templated helpers
// with address-space parameters, kernel attributes, multi-line macros; int
// and bool template values; a scalar and a constant-memory input.
inline KernelSpec header_helpers() {
  KernelSpec s;
  s.name = "header_helpers";
  ParamSpec scale = param("scale", "float");
  scale.is_scalar = true;
  ParamSpec bias = param("bias", "float");
  bias.in_constant = true;
  s.inputs = {param("inp", "float"), scale, bias};
  s.outputs = {param("out", "float")};
  s.template_args = {type_arg("T", "float"), {"K", TemplateArg::Int, "-3"},
                     {"USE_BIAS", TemplateArg::Bool, "true"}};
  s.header = R"(#include <metal_stdlib>
#include <metal_simdgroup>
using namespace metal;

constant float kScale = 2.0f;
constexpr constant int kTaps[3] = {1, 2, 1};
namespace helpers {
constant half kHalf = 0.5h;
}

template <typename U>
[[clang::always_inline]] METAL_FUNC U square(U x) {
  return x * x;
}

template <typename U>
inline U load_scaled(const device U* p, constant float& s, uint i) {
  thread U tmp = p[i];
  return tmp * U(s) * U(kScale);
}

inline float tg_sum(threadgroup float* buf, uint n) {
  float acc = 0.0f;
  for (uint i = 0; i < n; ++i) acc += buf[i];
  return acc;
}

#define APPLY_BIAS(v, b) \
  do {                   \
    (v) += (b);          \
  } while (0)
#define SQ(x) square(x)
)";
  s.source = R"(
    uint i = thread_position_in_grid.x;
    T v = load_scaled(inp, scale, i);
    v = SQ(v) * T(helpers::kHalf) + K;
    if (USE_BIAS) { APPLY_BIAS(v, bias[i % 3]); }
    out[i] = v * kTaps[i % 3];
)";
  return s;
}

// Every kernel with a golden file, by the golden's base name. The specs are
// made when a test runs, not when tests are registered: a seed file that
// cannot be read fails those tests with its message instead of aborting.
struct NamedKernel {
  std::string name;
  KernelSpec (*make)();
};
inline std::vector<NamedKernel> golden_kernels() {
  return {{"seed_myexp", [] { return myexp("float", "float"); }},
          {"seed_myexp_strided", myexp_strided},
          {"seed_grid_sample", grid_sample},
          {"seed_grid_sample_grad", grid_sample_grad},
          {"threadgroup_reduce", threadgroup_reduce},
          {"swizzles", swizzles},
          {"half_literals", half_literals},
          {"header_helpers", header_helpers}};
}

}  // namespace alloy::msl::test
