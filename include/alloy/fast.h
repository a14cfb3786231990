// Custom kernels: MLX's mx.fast.metal_kernel (Metal bodies, run here on
// NVIDIA GPUs and CPUs) and mx.fast.cuda_kernel (CUDA bodies).
#pragma once

#include <array>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include "alloy/array.h"
#include "alloy/device.h"
#include "alloy/errors.h"

namespace alloy::fast {

using TemplateArg = std::variant<Dtype, int, bool>;
using Dims3 = std::tuple<int, int, int>;

struct KernelCall {
  std::vector<array> inputs;
  std::vector<Shape> output_shapes;
  std::vector<Dtype> output_dtypes;
  Dims3 grid{1, 1, 1};
  Dims3 threadgroup{1, 1, 1};
  std::vector<std::pair<std::string, TemplateArg>> template_args;
  std::optional<double> init_value;
  bool verbose = false;
  // Overrides the kernel's own setting for this call when set.
  std::optional<bool> ensure_row_contiguous;
  StreamOrDevice stream;
  // Seconds the launch may run before it is stopped (KernelTimeout); unset:
  // $ALLOY_KERNEL_TIMEOUT when set, else no limit. CPU launches only so far.
  // (alloy::KernelTimeout, alloy/errors.h)
  std::optional<double> timeout;
  // GPU, a metal_kernel body not bounds-checked: a read of an input out of
  // bounds reads its last element (msl::KernelSpec::tolerate_input_reads).
  // alloy.mlx sets it on MLX's CUDA backend.
  bool tolerate_input_reads = false;
};


struct PreparedLaunch;  // src/fast/prepared_launch.h

// What validation and the variant caches need to know of one input, so a
// launch can be prepared for arrays that are not Alloy's (the MLX plugin).
struct OperandDesc {
  Dtype dtype;
  int ndim;
  size_t size;
};

// The callable metal_kernel returns: builds lazy outputs for one launch.
class CustomKernelFunction {
 public:
  std::vector<array> operator()(const KernelCall& call) const;
  // Everything of a launch but its arrays: checks `call` (whose `inputs` and
  // `stream` are not read; `operands` describes the inputs), then finds or
  // translates the variant for the GPU (CUDA) or the CPU (C++). Prints the
  // translation when call.verbose. Errors name the kernel.
  PreparedLaunch prepare(const std::vector<OperandDesc>& operands, const KernelCall& call, bool gpu) const;
  struct State;
  explicit CustomKernelFunction(std::shared_ptr<State> s) : state_(std::move(s)) {}

 private:
  std::shared_ptr<State> state_;
};

// On the GPU, a metal_kernel launched again and again with the same input
// shapes and strides gets a build with those as constants, made on a
// background thread (backend/cuda/specialize.h; ALLOY_SPECIALIZE=0: never).
// Returns when none is being made: for a benchmark or test that wants them
// in place after its warm-up.
void wait_for_specialized_kernels();
// How many such builds this process has made or loaded (tests).
unsigned specialized_kernels_built();

// $ALLOY_BOUNDS_CHECK: whether metal_kernel definitions that do not say are
// bounds-checked ("1") or not ("0", unset).
bool default_bounds_check();

// $ALLOY_RACE_CHECK: whether metal_kernel definitions are also race-checked
// on the CPU ("1": every access to a threadgroup array the body declares is
// checked against the other threads' since the last barrier, and a launch
// with two threads on one element, one writing, raises naming both lines and
// threads; msl::KernelSpec::race_check). It turns bounds checks on.
bool default_race_check();

// `bounds_check`: every subscript of an input, output or threadgroup array
// in the body checks its index, and a launch that goes out of bounds raises
// a std::runtime_error naming the kernel, buffer, index, size, thread and
// source line (docs/design/faults.md). Unset: $ALLOY_BOUNDS_CHECK ("1" on).
CustomKernelFunction metal_kernel(const std::string& name, const std::vector<std::string>& input_names,
                                  const std::vector<std::string>& output_names, const std::string& source,
                                  const std::string& header = "", bool ensure_row_contiguous = true,
                                  bool atomic_outputs = false, const std::string& math_mode = "safe",
                                  std::optional<bool> bounds_check = std::nullopt);

// MLX's cuda_kernel: the same call with a CUDA body, run on the GPU only.
// The body sees MLX's signature (`const T* name` per input, `name_shape`,
// `name_strides`, `name_ndim` when it uses them, `T* name` per output) and
// the template values as `using T = ...;` / `constexpr int N = ...;`. The
// grid counts threads, as for metal_kernel: blocks = ceil(grid/threadgroup).
// `shared_memory` bytes of dynamic shared memory per block (extern __shared__).
CustomKernelFunction cuda_kernel(const std::string& name, const std::vector<std::string>& input_names,
                                 const std::vector<std::string>& output_names, const std::string& source,
                                 const std::string& header = "", bool ensure_row_contiguous = true,
                                 int shared_memory = 0);

// mx.fast.metal_library: a whole Metal program (as `newLibraryWithSource`
// takes it) whose kernels are launched by binding their parameters by name.

// A fresh output for a `device T*` parameter: its shape and dtype.
struct OutputSpec {
  Shape shape;
  Dtype dtype;
};

// A quantized (MXFP8) tensor parameter, `tensor<device metal_fp8_e4m3_format,
// dextents<int, R>, tensor_handle, scales_plane>`: its elements (uint8 codes,
// MLX's order, any strides) and its scales plane (uint8 E8M0, the data's
// shape with the last axis ceil(n / 32): one scale per 32 elements along it,
// the layout of mx.quantize(..., mode="mxfp8")).
struct QuantizedTensorArg {
  array data;
  array scales;
};

// What a call binds to one parameter: an array (a buffer the kernel reads; for
// a `device T*` the contents the output starts from; a 0-d array for a
// `constant T&`), a fresh output, a number (a `constant T&` value, or the
// bytes of a `threadgroup T*` parameter), or a quantized tensor's two planes.
using LibraryArg = std::variant<array, OutputSpec, double, int64_t, bool, QuantizedTensorArg>;

enum class Dispatch {
  Threads,       // dispatchThreads: the grid counts threads (partial edge threadgroups)
  Threadgroups   // dispatchThreadgroups: the grid counts threadgroups
};

struct LibraryCall {
  std::vector<std::pair<std::string, LibraryArg>> args;  // by parameter name
  Dims3 grid{1, 1, 1};
  Dims3 threadgroup{1, 1, 1};
  Dispatch dispatch = Dispatch::Threads;
  bool verbose = false;  // print the program and its translation
  StreamOrDevice stream;
  std::optional<double> timeout;  // as KernelCall::timeout
};

// One entry point of a library: `k(call)` returns the outputs, lazily, one per
// `device T*` parameter in parameter order (output_names()).
class LibraryKernel {
 public:
  const std::string& name() const;
  // The `device T*` parameters, in parameter order: what a call returns.
  std::vector<std::string> output_names() const;
  // Every parameter a call binds (buffers, values, threadgroup memory), in order.
  std::vector<std::string> arg_names() const;
  // The parameter at [[buffer(index)]]; invalid_argument when there is none.
  std::string buffer_name(int index) const;
  // [[max_total_threads_per_threadgroup(N)]], or 0.
  int max_total_threads_per_threadgroup() const;
  // Errors: a missing, unknown or wrongly typed argument (ArgumentTypeError
  // for a dtype that does not match the parameter), a size that a vector
  // element type does not divide, too little threadgroup memory, a
  // threadgroup over the kernel's or the device's limit: before anything runs.
  std::vector<array> operator()(const LibraryCall& call) const;

  struct State;
  explicit LibraryKernel(std::shared_ptr<State> s) : state_(std::move(s)) {}
  State& state() const { return *state_; }  // for the host API's command encoder (alloy/metal.h)

 private:
  std::shared_ptr<State> state_;
};

class MetalLibrary {
 public:
  // The entry points, in the order the program declares them.
  std::vector<std::string> kernel_names() const;
  // invalid_argument listing the kernels when `name` is not one.
  // `function_constants` gives the program's function constants values (as
  // Metal's MTLFunctionConstantValues), keyed by name or by index ("0"):
  // numbers, a bool constant taking nonzero as true. A constant left out is
  // undefined (is_function_constant_defined is false for it).
  LibraryKernel kernel(const std::string& name, const std::map<std::string, double>& function_constants = {}) const;
  // The program's function constants, "type name [[function_constant(i)]]".
  std::vector<std::string> function_constants() const;
  // What Apple's compiler would warn about, each quoting the line.
  const std::vector<std::string>& warnings() const;

  struct State;
  explicit MetalLibrary(std::shared_ptr<State> s) : state_(std::move(s)) {}

 private:
  std::shared_ptr<State> state_;
};

// Parses `source` (a whole MSL program; `header` goes before it) and finds its
// entry points; a program Metal would refuse (no kernel, two with one name,
// an invalid vector type or attribute type) throws msl::CompileError quoting
// the line. Kernels are translated and compiled on first launch, per device
// and argument types, through the same caches as metal_kernel.
MetalLibrary metal_library(const std::string& source, const std::string& header = "",
                           const std::string& math_mode = "safe");

// MLX's precompiled_cuda_kernel: runs the kernel `name` (an extern "C"
// __global__ function) of `compiled_source`, a PTX text or a cubin the caller
// built (NVRTC, nvcc), on the GPU. Its parameters are, in order, a pointer
// per input, a pointer per output, then each scalar by value (bool, int as
// int32, float as float32). The grid counts threads: blocks =
// ceil(grid/threadgroup). `shared_memory` bytes of dynamic shared memory per
// block; `init_value` fills the outputs first; `ensure_row_contiguous`
// copies strided inputs. No derivative (wrap it in a custom_function).
using ScalarArg = std::variant<bool, int, float>;
std::vector<array> precompiled_cuda_kernel(const std::string& name, const std::string& compiled_source,
                                           const std::vector<array>& inputs, const std::vector<Shape>& output_shapes,
                                           const std::vector<Dtype>& output_dtypes,
                                           const std::vector<ScalarArg>& scalars, Dims3 grid, Dims3 threadgroup,
                                           int shared_memory = 0, std::optional<float> init_value = std::nullopt,
                                           bool ensure_row_contiguous = false, StreamOrDevice s = {});

}  // namespace alloy::fast
