// The MSL front end: turns an MLX `metal_kernel` body into source text for
// Metal (MLX's own form, shown by verbose=True), host C++ or CUDA.
// It knows nothing about arrays: callers describe inputs/outputs by MSL type
// spelling and flags. Depends on the C++ standard library only.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace alloy::msl {

enum class Target { Metal, Cpp, Cuda };  // Metal = the MLX-form source for verbose=True

// The language of a kernel's `source` and `header`: an MSL body
// (mx.fast.metal_kernel, every target) or a CUDA body (mx.fast.cuda_kernel,
// the CUDA target only; the signature is generated the same way, with CUDA
// types and the user's parameter names).
enum class Dialect { Metal, Cuda };

struct ParamSpec {            // one input or output
  std::string name;           // "inp"
  std::string type;           // MSL element type spelling: "float", "float16_t", "int", "bool", ...
  bool is_scalar = false;     // 0-d input -> `const constant T& name`
  bool in_constant = false;   // small input (< 8 elements) -> `const constant T* name`
};

struct TemplateArg {
  enum Kind { Type, Int, Bool };
  std::string name;
  Kind kind = Type;
  std::string value;  // MSL type spelling for Type, decimal for Int, "true"/"false" for Bool
};

struct KernelSpec {
  std::string name;  // user's name; the kernel is custom_kernel_<name>[_suffix]
  std::vector<ParamSpec> inputs, outputs;
  std::vector<TemplateArg> template_args;
  std::string source, header;
  bool atomic_outputs = false;
  std::string math_mode = "safe";  // safe | relaxed | fast
  Dialect dialect = Dialect::Metal;
  // CUDA target: where threadgroup arrays declared at the kernel's own scope
  // live. Static `__shared__` storage is capped by CUDA at 48 KB per block;
  // past that they move to dynamic shared memory and the launcher passes
  // their total size, which it learns from a static build that keeps every
  // such array (unused ones included) allocated.
  enum class ThreadgroupStorage { Static, StaticKept, Dynamic };
  ThreadgroupStorage threadgroup_storage = ThreadgroupStorage::Static;
  // metal_library: `source` is a whole Metal program (alloy/msl/program.h)
  // and this names the entry point the translation runs (a kernel function,
  // or the [[host_name]] of an instantiation); "" for a metal_kernel body.
  // `inputs` are then the parameters the kernel reads (buffers, then values,
  // in parameter order) and `outputs` the buffers it writes.
  std::string program_entry;
  // metal_library: bytes of threadgroup memory for each `[[threadgroup(i)]]`
  // parameter of the entry, in parameter order (setThreadgroupMemoryLength).
  std::vector<unsigned> threadgroup_bytes;
  // Every subscript of an input, output or threadgroup array in the body
  // checks its index (runtime/metal_bounds.h); the launch then raises
  // naming the buffer, the index and the thread. metal_kernel bodies only.
  bool bounds_check = false;
  // With bounds_check: only the inputs' subscripts are checked, and one out
  // of bounds reads the input's last element; nothing is reported (the launch
  // passes no report). A Metal GPU reads whatever lies outside a buffer, and
  // kernels rely on it (the seed's grid_sample loads corners outside the
  // image before zeroing their weights); alloy.mlx on MLX's CUDA backend,
  // whose allocator places a large array at the start of its own mapping,
  // would fault the GPU there and lose its context.
  bool tolerate_input_reads = false;
  // CPU target, with bounds_check: every access to a threadgroup array the
  // body declares is also checked against the other threads' accesses since
  // the last region boundary (runtime/metal_race.h); two threads touching one
  // element with no barrier between, one of them writing, is reported like a
  // bounds fault. Checked in kernels split into regions (the boundaries are
  // the barriers and SIMD-group calls); others run unchecked, and their
  // translation says so. The CUDA target ignores it.
  bool race_check = false;
  // CUDA target: the entry point's __launch_bounds__ (0: none). A kernel
  // whose registers leave fewer threads a block than a launch asks for is
  // built again with 1024 here (the backend's CustomKernelLaunch), as Metal
  // runs any kernel in threadgroups of 1024.
  unsigned cuda_launch_bound = 0;
  // CUDA target, a metal_kernel body: a variant specialized to one set of
  // input layouts. Input i's shape and strides (and so its ndim) become
  // constants of the translation in place of the values the launch passes
  // (which the entry point still takes, unused), so the compiler folds the
  // divisions and index arithmetic that use them, as a hand-written kernel
  // with its sizes as template constants gets. Empty: read at run time.
  // In a translation that tolerates input reads, each input's element count
  // too, the limit its reads are clamped to (0 where the layout is not
  // constant): the clamp is then a min against an immediate.
  struct InputLayout {
    std::vector<int> shape;
    std::vector<int64_t> strides;
    unsigned long long elements = 0;
  };
  std::vector<InputLayout> constant_layouts;
  // CPU target, a kernel that synchronises its threads: Auto splits it into
  // regions where it can (msl/cpu_regions.h), else makes its threads
  // coroutines where it can, else fibers (msl/cpu_threads.h); the others
  // stop at coroutines or use fibers only. $ALLOY_CPU_SYNC sets it for a run.
  enum class CpuSync { Auto, Coroutines, Fibers };
  CpuSync cpu_sync = CpuSync::Auto;
};

// What the body uses, found on tokens (never substrings).
struct Analysis {
  std::vector<std::string> attributes;  // Metal attribute names used by `source`, in MLX's order
  std::vector<bool> uses_shape, uses_strides, uses_ndim;  // per input (false for 0-d inputs)
  bool uses_sync = false;     // barriers, simd_/quad_ calls, threadgroup memory, simdgroup_matrix
  bool uses_atomics = false;  // atomic_outputs, or atomic types/functions named in source/header
  bool uses_cooperative_groups = false;  // a CUDA body naming `cooperative_groups` or `cg`
  // `#pragma STDC FP_CONTRACT OFF` (or clang's `#pragma clang fp contract(off)`)
  // in the source, header or an included header: the kernel is compiled
  // without contracting a * b + c into an FMA (msl/analysis.cpp says why).
  bool fp_contract_off = false;
  // The largest alignment a cast in the kernel (source, header or included
  // headers) assumes of a device or constant buffer's base: 16 for
  // `*(device float4*)(x + i)`, 16 for a cast to a user's type; 0 when it
  // casts no buffer pointer to a type aligned beyond 8 bytes. Metal's buffers
  // start on pages, so such casts are sound there; MLX's CPU allocator gives
  // 8 bytes, and alloy.mlx aligns the buffers of such kernels itself.
  unsigned assumed_buffer_alignment = 0;
};

// Which file a generated line comes from.
enum class Origin { Generated, Source, Header };

// Generated column `generated_col` corresponds to user column `user_col`;
// when `exact`, columns after it on the same run advance together, otherwise
// (inside a rewritten token) they all map to `user_col`.
struct ColumnAnchor {
  int generated_col = 1;
  int user_col = 1;
  bool exact = true;
};

struct LineInfo {
  Origin origin = Origin::Generated;
  int line = 0;  // user line for Source/Header; the generated line itself for Generated
  std::vector<ColumnAnchor> anchors;  // sorted by generated_col; empty for Generated lines
};

// Generated line -> (file, user line, column anchors). `#line` directives in
// the translation name the files "source", "header" and `generated_file`.
struct LineMap {
  std::vector<LineInfo> lines;  // lines[k - 1] describes generated line k
  std::string generated_file = "generated";

  // The generated line holding user line `line` of `origin`; 0 when none.
  int generated_line(Origin origin, int line) const;
  // The user column of generated (line, col); `col` itself when unmapped.
  int user_column(int generated_line, int generated_col) const;
};

// One parameter of the glue entry point (CUDA: in kernel argument order,
// before the trailing `alloy_msl::cuda::Dispatch`; CPU: read from the Launch;
// Metal: in [[buffer(i)]] order).
struct GlueParam {
  enum Kind {
    Buffer,   // an input or output array: a device pointer / L->buffers[index]
    Scalar,   // a 0-d input: passed as a pointer to its one element
    Shape,    // input `index`'s shape: int32 array of ndim / L->shapes[index]
    Strides,  // input `index`'s strides: int64 array of ndim / L->strides[index]
    Ndim      // input `index`'s ndim: an `int` by value / L->ndim[index]
  };
  Kind kind = Buffer;
  // Buffer/Scalar: position in inputs then outputs; else the input's index
  // (metal_library's tensor parameters: the buffer's position, outputs too).
  int index = 0;
  std::string name;  // the glue parameter's name in the generated source
};

struct TranslatedKernel {
  Target target = Target::Cpp;
  std::string source;       // complete translation unit (includes the runtime header by name)
  std::string entry;        // exported symbol: "alloy_kernel_main" (Metal: the host_name)
  std::string kernel_name;  // custom_kernel_<name>[_suffix]
  Analysis analysis;
  LineMap lines;
  std::vector<GlueParam> params;  // the glue's parameters, see GlueParam
  // Threadgroup arrays at the kernel's own scope that the storage mode
  // applied to (KernelSpec::threadgroup_storage).
  int kernel_scope_threadgroup_arrays = 0;
  // metal_library: bytes of threadgroup memory the launch provides for the
  // entry's [[threadgroup(i)]] parameters (CUDA: dynamic shared memory).
  unsigned threadgroup_parameter_bytes = 0;
  // A bounds-checked translation: what each slot of its BoundsReport names
  // (the inputs, then the outputs, then the body's threadgroup arrays).
  std::vector<std::string> bounds_names;
  // CPU target, a kernel that synchronises: "regions", "coroutines" or
  // "fibers", then ": " and why not the one before where it was asked for
  // (msl/cpu_threads.h); "" otherwise.
  std::string cpu_threads;
  // What was written into the body before it was translated, for the
  // translation's comment: the barriers between statements that share
  // threadgroup memory between lockstep lanes (msl/lockstep.h; CPU and
  // CUDA targets), and, CPU target, a kernel calling synchronising helpers
  // of its header: which are written out at their calls in the body so that
  // regions can take it ("block_sum_once is written out at its 2 calls in
  // the body (...)"), or why none is (msl/cpu_inline_helpers.h); "" for
  // none of these.
  std::string cpu_inlined;
  // CPU target: the -O level to compile at. A kernel split into regions is
  // loops over the group's threads around the user's own; g++ vectorises
  // across the threads only at -O3 (it peels the inner loop and versions the
  // nest), and other kernels gained nothing from it.
  int cpu_optimization = 2;
  // CPU target: more flags for the host compiler. A region's loop holds each
  // thread's tests of values its row shares (a grid_sample corner's bounds,
  // say): unswitched on all of them, the column loop is straight code that
  // vectorises; g++'s defaults stop at three levels and 50 instructions.
  std::vector<std::string> cpu_flags;
  // CPU target: the atomic outputs (indices into the spec's outputs) the
  // kernel only adds to, each add taking Launch::plain_adds (msl/private_adds.h).
  std::vector<int> private_add_outputs;
};

// An error in the user's MSL found by the front end; what() quotes the
// user's line with a caret under the column.
class CompileError : public std::runtime_error {
 public:
  CompileError(const std::string& message, std::string file, int line, int column)
      : std::runtime_error(message), file_(std::move(file)), line_(line), column_(column) {}
  const std::string& file() const { return file_; }  // "source" or "header"
  int line() const { return line_; }
  int column() const { return column_; }

 private:
  std::string file_;
  int line_, column_;
};

Analysis analyze(const KernelSpec&);

// How many consecutive threadgroups along x one CUDA block runs, one after
// the other. A kernel with no barrier, SIMD-group function or threadgroup
// memory cannot observe which threads share a block, so the CUDA glue runs
// several threadgroups per block to keep more loads in flight; the launcher
// divides the x grid of blocks by the same factor.
int cuda_threadgroups_per_block(const Analysis&);
// Throws std::invalid_argument for a CUDA body asked for another target.
TranslatedKernel translate(const KernelSpec&, Target);

// The CUDA spelling of an MSL element type ("float16_t" -> "__half"); other
// spellings are returned as they are.
std::string cuda_type_name(const std::string& msl_type);

// The kernel's name as MLX forms it: custom_kernel_<name>, then the template
// values, then each input's type (with `s` for 0-d, `c` for constant-memory
// inputs) and each output's type, so that two dtypes never share a name.
std::string kernel_name(const KernelSpec&);

// Rewrites a g++/clang or NVRTC log so each diagnostic in `source`/`header`
// names the user's line and column and quotes that line with a caret.
std::string map_diagnostics(const TranslatedKernel&, const std::string& log, const KernelSpec&);

}  // namespace alloy::msl
