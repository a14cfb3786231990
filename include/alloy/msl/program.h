// Whole Metal programs (mx.fast.metal_library): the entry points of a
// complete MSL translation unit and their parameters, as the host binds them.
// Part of the MSL front end: it knows nothing about arrays.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace alloy::msl {

// One parameter of a kernel entry point, as Metal's host API sees it.
struct ProgramParam {
  enum class Role {
    ReadBuffer,     // `device const T*`, `constant T*`: an array the kernel reads
    ConstantValue,  // `constant T&`, `device const T&`: one value (setBytes)
    WriteBuffer,    // `device T*`: an array the kernel writes (an output)
    Threadgroup,    // `threadgroup T* p [[threadgroup(i)]]` or `threadgroup T p[A][B] [[threadgroup(i)]]`
    Attribute       // `uint2 gid [[thread_position_in_grid]]`: filled by the launch
  };
  Role role = Role::ReadBuffer;
  std::string name;       // "" when the declaration names none
  std::string type;       // the element type, concrete, without address space or const: "float4", "half"
  int index = -1;         // [[buffer(i)]] for buffers and values, [[threadgroup(i)]] for threadgroup memory
  std::string attribute;  // Attribute: "thread_position_in_grid"
  // Threadgroup array parameters: the dimensions as written (`32`, `TILE + 1`).
  std::vector<std::string> array_dims;
  // A Metal 4 tensor, `tensor<device T, dextents<int, R>> t [[buffer(i)]]`:
  // its rank (0 for every other parameter). `type` is then the element type
  // T; the role is ReadBuffer for const elements, WriteBuffer otherwise.
  int tensor_rank = 0;
  // A quantized tensor (its type names a scales plane, `tensor_blockwise<
  // tensor_plane_scales, ...>`): the host binds its data and its scales.
  bool tensor_scales = false;
  int line = 0, col = 0;  // of the parameter in the program (file "source")
};

struct ProgramKernel {
  std::string name;           // the entry point: the function's name, or its [[host_name]]
  std::string function;       // the kernel function in the source
  std::string template_args;  // "<float, Add>" for an explicit instantiation, else ""
  std::vector<ProgramParam> params;
  int max_total_threads_per_threadgroup = 0;  // 0: not declared
  int line = 0;                               // of the definition or instantiation
  // Byte offsets in the source of the body's `{` and one past its `}` (an
  // instantiation's are its template's).
  std::size_t body_begin = 0, body_end = 0;
};

// A program-scope `constant T name [[function_constant(index)]];`: its value
// is given when a kernel is made (Metal's MTLFunctionConstantValues).
struct FunctionConstant {
  std::string type;  // as written: "bool", "float", "uint"
  std::string name;
  int index = -1;
  int line = 0;
};

struct ProgramInfo {
  std::vector<ProgramKernel> kernels;  // in the order the program declares them
  std::vector<FunctionConstant> function_constants;  // in source order
  // What Apple's compiler would warn about (an unknown attribute it ignores):
  // each quotes the user's line.
  std::vector<std::string> warnings;
};

// Finds the entry points of `source` (a whole program; file "source").
// Throws CompileError quoting the line for what Apple's compiler refuses: no
// kernel, two entry points with one name, an attribute parameter of a type
// Metal does not allow (`uint4 id [[thread_position_in_grid]]`), a parameter
// the host cannot bind, an explicit instantiation without [[host_name]].
// `header` (the library's header, which Metal prepends) is read for its
// program-scope `using` aliases only.
ProgramInfo parse_program(const std::string& source, const std::string& header = "");

// The function constants `source` declares (CompileError for a malformed
// declaration or two with one index or name).
std::vector<FunctionConstant> find_function_constants(const std::string& source);
// `source` with each function constant given its value: `values` maps a
// constant's name to a C++ literal of its type; a constant without one is
// undefined (Metal: its value is unspecified; here T()), and each
// `is_function_constant_defined(name)` becomes true or false. Line numbers
// are kept, so errors still quote the user's lines.
std::string specialize_function_constants(const std::string& source, const std::map<std::string, std::string>& values);

// A metal_kernel's header and body, where the function constants the header
// declares get no values (MLX's quantized.h declares some for its own
// pipelines): each is its type's T(), and `is_function_constant_defined`
// false in either text. Line numbers kept.
std::pair<std::string, std::string> specialize_kernel_function_constants(const std::string& header,
                                                                         const std::string& source);

// The same for one of MLX's headers a kernel includes (quantized.h declares
// align_M/N/K for its own pipelines, and includes are read as they are
// installed): its constants get T(), and `is_function_constant_defined`
// of one it or an earlier include declared (`declared`, which this extends)
// becomes false. `file` names the header in errors.
std::string specialize_included_function_constants(const std::string& text, const std::string& file,
                                                   std::map<std::string, bool>& declared);

// parse_program, then every check the translation makes of the program and
// its header (brackets, vector types, included MLX headers), as Apple's
// compiler makes them when the library is created.
ProgramInfo check_program(const std::string& source, const std::string& header);

// `source` with each call of a function-like macro that writes kernels (its
// body names `kernel`: AIX's `SpecializeAdd("f32", float4);`, whose body is
// a `template [[host_name(...)]] [[kernel]] void add(...)` instantiation)
// written out on the call's own line, each parameter its argument, as the
// preprocessor would: parse_program reads the program before macros are
// expanded, and would not find those kernels. Taken: a macro defined once,
// its parameters named, no `#` or `##` in its body, called as a statement
// of its own at program scope (`NAME(args);`); other macros and calls are
// left to the compiler. Line numbers are kept. The source as it is when
// there is none (or it does not lex: parse_program then says why).
std::string expand_kernel_macros(const std::string& source);

}  // namespace alloy::msl
