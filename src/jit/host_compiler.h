// Compiling a translated kernel with the host C++ compiler into a shared object.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace alloy::jit {

struct CompileOptions {
  std::string math_mode = "safe";        // safe | relaxed | fast (as MLX's metal_kernel)
  bool native = true;                    // -march=native (the CPU's identity joins the cache key)
  int optimization = 2;                  // -O level
  // Appended to the command line; a `--param=` one as the host compiler
  // spells it, or left out where it has none (host_compile_flags).
  std::vector<std::string> extra_flags;
  std::string compiler;                  // empty: $ALLOY_CXX, else the compiler Alloy was built with
  std::string entry = "alloy_kernel_main";
};

// The compiler a compile with `options` uses.
std::string host_compiler_path(const CompileOptions& options);

// `compiler --version` output (run once per compiler per process).
const std::string& host_compiler_identity(const std::string& compiler);

// What -march=native depends on: the machine and the CPU's feature flags.
const std::string& host_cpu_identity();

// The command-line flags for `options` (without -I, -o and the source), as
// asked for: tuning flags (`--param`s, `-fvect-cost-model=`) as GCC 12 spells them. With the compiler's identity they
// determine the flags it gets, so the cache key hashes these and a process
// whose kernels are all cached never probes the compiler.
std::vector<std::string> requested_compile_flags(const CompileOptions& options);

// requested_compile_flags with each tuning flag as the host compiler spells
// it, or left out (the compiler is asked once per flag per process).
std::vector<std::string> host_compile_flags(const CompileOptions& options);

// Compiles `source` (a complete translation unit) with `compiler flags
// -I include_dir` into a shared object and returns its bytes. Throws
// CompileError with the compiler's output when compilation fails.
std::string compile_shared_object(const std::string& compiler, const std::vector<std::string>& flags,
                                  const std::filesystem::path& include_dir, const std::string& source);

}  // namespace alloy::jit
