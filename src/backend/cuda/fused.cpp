// GPU evaluation of a fused elementwise chain: one generated kernel reads
// each input once, computes every step in registers with the unfused
// kernels' functors, compute types and roundings, and writes the last step.
// A trailing reduction runs the Reduce kernels with the chain computed where
// they read their input (one pass, nothing stored), so its order (and bits)
// are the unfused ones.
#include "backend/cuda/fused.h"

#include <stdexcept>

#include "backend/cuda/elementwise.h"
#include "backend/cuda/kernels.h"
#include "backend/cuda/reduce.h"

namespace alloy::cuda {

namespace {

std::string step_type(const FusedStep& st) { return device_type_name(st.dtype); }
std::string value(int step) { return "v" + std::to_string(step); }

// The expression computing step `st` from earlier values, as the unfused
// kernel computes it (map/zip/select/cast modules in elementwise.cpp).
std::string step_expression(const FusedStep& st, const std::vector<FusedStep>& steps) {
  const std::string out = step_type(st);
  switch (st.kind) {
    case FusedStep::Kind::Unary:
      return "alloy::cast_value<" + out + ">(alloy::unary::Fn<alloy::UnaryOp::" + unary_info(st.unary).name +
             ">{}(alloy::math::compute_t<" + step_type(steps[st.a]) + ">(" + value(st.a) + ")))";
    case FusedStep::Kind::Binary: {
      const std::string c = "alloy::math::compute_t<" + step_type(steps[st.a]) + ">";
      return "alloy::cast_value<" + out + ">(alloy::binary::Fn<alloy::BinaryOp::" + binary_info(st.binary).name +
             ">{}(" + c + "(" + value(st.a) + "), " + c + "(" + value(st.b) + ")))";
    }
    case FusedStep::Kind::Cast:
      return "alloy::cast_value<" + out + ">(" + value(st.a) + ")";
    case FusedStep::Kind::Select:
      return "alloy::ternary::Select{}(" + value(st.a) + ", " + value(st.b) + ", " + value(st.c) + ")";
    case FusedStep::Kind::Input:
      break;
  }
  throw std::logic_error("[compile] an input step has no expression");
}

}  // namespace

std::string fused_family_key(const std::vector<FusedStep>& steps, const std::vector<FusedRead>& reads) {
  std::string key = "fused/";
  for (const FusedStep& st : steps) {
    key += "IUBCS"[static_cast<int>(st.kind)];
    key += std::to_string(static_cast<int>(st.dtype));
    switch (st.kind) {
      case FusedStep::Kind::Input: key += static_cast<char>(reads[st.input]) + std::to_string(st.input); break;
      case FusedStep::Kind::Unary: key += "." + std::to_string(static_cast<int>(st.unary)); break;
      case FusedStep::Kind::Binary: key += "." + std::to_string(static_cast<int>(st.binary)); break;
      default: break;
    }
    for (int operand : {st.a, st.b, st.c})
      if (operand >= 0) key += ":" + std::to_string(operand);
    key += ",";
  }
  return key;
}

int fused_vector_width(const std::vector<FusedStep>& steps, const std::vector<FusedRead>& reads) {
  size_t widest = size_of(steps.back().dtype);
  for (const FusedStep& st : steps) {
    if (st.kind == FusedStep::Kind::Input && reads[st.input] == FusedRead::Dense) {
      widest = std::max(widest, size_of(st.dtype));
    }
  }
  return widest >= 16 ? 1 : static_cast<int>(16 / widest);
}

namespace {

// What every fused module starts with: the headers, the kernel's Args, the
// value type `Out` and `element(inputs...)`, which computes the chain.
std::string prelude(const std::vector<FusedStep>& steps, const std::vector<FusedRead>& reads,
                    const std::string& extra_include) {
  const size_t last = steps.size() - 1;
  std::string src =
      "#include \"elementwise.cuh\"\n" + extra_include +
      "#include \"backend/common/unary_ops.h\"\n"
      "#include \"backend/common/binary_ops.h\"\n"
      "#include \"backend/common/ternary_ops.h\"\n"
      "namespace alloy_fused {\n"
      // Each step's value passes through an add of -0 with an explicit
      // rounding mode (the identity on every value): ptxas never contracts a
      // multiply and an add into one FMA across it, as the unfused kernels,
      // a store and a load apart, never do. (An empty asm is not enough:
      // ptxas sees the multiply and the add next to each other.)
      "__device__ __forceinline__ float settle_real(float v) {\n"
      "  asm(\"add.rn.f32 %0, %0, 0f80000000;\" : \"+f\"(v));\n"
      "  return v;\n"
      "}\n"
      "__device__ __forceinline__ double settle_real(double v) {\n"
      "  asm(\"add.rn.f64 %0, %0, 0d8000000000000000;\" : \"+d\"(v));\n"
      "  return v;\n"
      "}\n"
      "template <typename T>\n"
      "__device__ __forceinline__ T settle(T v) {\n"
      "  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) return settle_real(v);\n"
      "  else if constexpr (alloy::math::is_complex_v<T>) return T(settle_real(v.re), settle_real(v.im));\n"
      "  else return v;\n"
      "}\n"
      "struct Args {\n  const void* in[" +
      std::to_string(reads.size()) +
      "];\n  void* out;\n  int64_t n;\n};\n"
      "using Out = " +
      step_type(steps[last]) + ";\n";
  // The element function: inputs as parameters, each step a settled local.
  std::string params;
  for (size_t k = 0; k < steps.size(); ++k) {
    if (steps[k].kind != FusedStep::Kind::Input) continue;
    params += (params.empty() ? "" : ", ") + step_type(steps[k]) + " " + value(static_cast<int>(k));
  }
  src += "__device__ __forceinline__ Out element(" + params + ") {\n";
  for (size_t k = 0; k < steps.size(); ++k) {
    const FusedStep& st = steps[k];
    if (st.kind == FusedStep::Kind::Input) continue;
    src += "  const " + step_type(st) + " " + value(static_cast<int>(k)) + " = settle(" + step_expression(st, steps) +
           ");\n";
  }
  return src + "  return " + value(static_cast<int>(last)) + ";\n}\n";
}

// The arguments of element() for the value at index `i`, reading the inputs
// through `args` ("A." or "A->"): dense inputs at i, scalar ones at 0.
std::string element_arguments(const std::vector<FusedStep>& steps, const std::vector<FusedRead>& reads,
                              const std::string& args) {
  std::string call;
  for (const FusedStep& st : steps) {
    if (st.kind != FusedStep::Kind::Input) continue;
    const std::string t = step_type(st);
    call += (call.empty() ? "" : ", ") + std::string("static_cast<const ") + t + "*>(" + args + "in[" +
            std::to_string(st.input) + "])[" + (reads[st.input] == FusedRead::Scalar ? "0" : "i") + "]";
  }
  return call;
}

}  // namespace

std::string fused_module_source(const std::vector<FusedStep>& steps, const std::vector<FusedRead>& reads,
                                const std::string& name) {
  const int V = name == "fused_v" ? fused_vector_width(steps, reads) : 1;
  std::string src = prelude(steps, reads, "") + "}  // namespace alloy_fused\n";
  // The vector form loads V elements of each dense input at once; scalars
  // are loaded once per thread.
  std::string call_dense, scalars, loads;
  for (size_t k = 0; k < steps.size(); ++k) {
    const FusedStep& st = steps[k];
    if (st.kind != FusedStep::Kind::Input) continue;
    const std::string t = step_type(st), v = value(static_cast<int>(k)), in = "A.in[" + std::to_string(st.input) + "]";
    const std::string sep = call_dense.empty() ? "" : ", ";
    if (reads[st.input] == FusedRead::Scalar) {
      scalars += "  const " + t + " " + v + " = *static_cast<const " + t + "*>(" + in + ");\n";
      call_dense += sep + v;
    } else {
      loads += "    const alloy::Vec<" + t + ", V> x" + std::to_string(k) + " = reinterpret_cast<const alloy::Vec<" + t +
               ", V>*>(" + in + ")[i];\n";
      call_dense += sep + "x" + std::to_string(k) + ".v[j]";
    }
  }
  src += "extern \"C\" __global__ void " + name +
         "(const alloy_fused::Args A) {\n  using Out = alloy_fused::Out;\n  constexpr int V = " + std::to_string(V) +
         ";\n" + scalars +
         "  Out* out = static_cast<Out*>(A.out);\n"
         "  const int64_t nv = A.n / V;\n"
         "  for (int64_t i = alloy::global_thread(); i < nv; i += alloy::grid_threads()) {\n" +
         loads +
         "    alloy::Vec<Out, V> r;\n"
         "#pragma unroll\n"
         "    for (int j = 0; j < V; ++j) r.v[j] = alloy_fused::element(" +
         call_dense +
         ");\n"
         "    reinterpret_cast<alloy::Vec<Out, V>*>(out)[i] = r;\n"
         "  }\n"
         "  for (int64_t i = nv * V + alloy::global_thread(); i < A.n; i += alloy::grid_threads()) {\n"
         "    out[i] = alloy_fused::element(" +
         element_arguments(steps, reads, "A.") + ");\n  }\n}\n";
  return src;
}

std::string fused_reduce_module_source(const std::vector<FusedStep>& steps, const std::vector<FusedRead>& reads,
                                       ReduceOp op, Dtype acc, Dtype out, const std::string& name) {
  // The Reduce kernel reads `in + k` and `p[j]`: Values computes the chain's
  // value at each index it is asked for, so the reduction folds exactly the
  // values the unfused chain would have stored, in the same order.
  std::string src = prelude(steps, reads, "#include \"reduce.cuh\"\n") +
                    "struct Values {\n"
                    "  using value_type = Out;\n"
                    "  const Args* A;\n"
                    "  int64_t base;\n"
                    "  __device__ __forceinline__ Values operator+(int64_t k) const { return {A, base + k}; }\n"
                    "  __device__ __forceinline__ Out operator[](int64_t j) const {\n"
                    "    const int64_t i = base + j;\n"
                    "    return element(" +
                    element_arguments(steps, reads, "A->") +
                    ");\n  }\n};\n}  // namespace alloy_fused\n";
  const std::string template_args = std::string("alloy::ReduceOp::") + reduce_info(op).name +
                                    ", alloy_fused::Values, " + device_type_name(acc) + ", " + device_type_name(out);
  src += "extern \"C\" __global__ void __launch_bounds__(256) " + name + "(const __grid_constant__ alloy_fused::Args A, " +
         device_type_name(out) + "* out, alloy::cuda::RowReduceArgs a) {\n  alloy::" + name + "<" + template_args +
         ">(alloy_fused::Values{&A, 0}, out, a);\n}\n";
  return src;
}

}  // namespace alloy::cuda

namespace alloy {

using namespace cuda;

void FusedElementwise::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  CUstream s = stream_for(stream());
  // Inputs are read in row-major order, as on the CPU: a strided one is made
  // contiguous first; a size-1 one is broadcast to every element.
  std::vector<array> dense;
  std::vector<FusedRead> reads;
  dense.reserve(inputs.size());
  for (const array& in : inputs) {
    const bool scalar = in.size() == 1;
    reads.push_back(scalar ? FusedRead::Scalar : FusedRead::Dense);
    dense.push_back(scalar ? in : row_contiguous(in, s, "compile"));
  }
  // The kernel's Args: input pointers, the output pointer, the count.
  std::vector<uint64_t> args;
  for (const array& in : dense) args.push_back(reinterpret_cast<uint64_t>(in.raw_data()));
  array& values = outputs[0];
  allocate_row_contiguous(values);
  if (reduces_) {
    // The Reduce kernels' launches, reading the chain's values as they are
    // computed (one pass, nothing stored).
    args.push_back(0);
    args.push_back(static_cast<uint64_t>(shape_size(domain_)));
    if (values.size() == 0) return;
    const std::string op = reduce_info(reduce_).name;
    const Dtype t = steps_.back().dtype;
    const Dtype acc_t = reduce_acc_dtype(reduce_, t, op.c_str());
    ReduceSource source;
    source.dtype = t;
    source.param = args.data();
    source.row_kernel = [&](const std::string& kernel_name, Dtype out_t) {
      return kernel(fused_family_key(steps_, reads) + "/" + op + "/" + dtype_name(acc_t) + "/" + dtype_name(out_t),
                    kernel_name, [&](const std::string& k) {
                      return fused_reduce_module_source(steps_, reads, reduce_, acc_t, out_t, k);
                    });
    };
    std::vector<array> keep_alive;
    run_reduce(op, domain_, source, values, acc_t, axes_, s, keep_alive);
    note_pending(stream());
    return;
  }
  const int64_t n = static_cast<int64_t>(values.size());
  if (n > 0) {
    const int V = fused_vector_width(steps_, reads);
    bool vector_ok = aligned(values.raw_data(), V * values.itemsize());
    for (size_t k = 0; k < dense.size(); ++k) {
      if (reads[k] == FusedRead::Dense) vector_ok = vector_ok && aligned(dense[k].raw_data(), V * dense[k].itemsize());
    }
    const std::string name = vector_ok ? "fused_v" : "fused_1";
    CUfunction fn = kernel(fused_family_key(steps_, reads), name,
                           [&](const std::string& k) { return fused_module_source(steps_, reads, k); });
    args.push_back(reinterpret_cast<uint64_t>(values.raw_data()));
    args.push_back(static_cast<uint64_t>(n));
    void* params[] = {args.data(), nullptr};
    const unsigned grid[3] = {grid_blocks(vector_ok ? n / V + 1 : n), 1, 1}, block[3] = {kBlock, 1, 1};
    cuda_driver::launch(fn, grid, block, 0, s, params);
  }
  note_pending(stream());
}

}  // namespace alloy
