// NVRTC, loaded at run time (dlopen libnvrtc), compiling one CUDA C++
// translation unit to a cubin (SASS for one architecture, not PTX).
//
// The runtime headers in src/msl/runtime/ (metal_cuda.h and the portable
// headers it includes) are handed to NVRTC as in-memory headers, so a kernel
// source only needs `#include "metal_cuda.h"`.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "jit/compile_error.h"

namespace alloy::jit {

// CompileError: see jit/compile_error.h (shared with the host compiler).

struct NvrtcOptions {
  std::string arch = "sm_90";       // "sm_90", "sm_89", ... (also accepts "90"); "compute_90": PTX
  std::string math_mode = "safe";   // safe | relaxed | fast (fast adds --use_fast_math)
  bool line_info = false;           // -lineinfo, for profilers
  // NVRTC's automatic precompiled header (--pch): later compiles in this
  // process that include the same runtime headers skip their parse (about
  // -40%), but the first compile pays to create it (about +40%). A PCH does
  // not carry over to another process.
  bool use_pch = false;
  std::vector<std::string> extra_options;                         // passed last, verbatim
  std::vector<std::pair<std::string, std::string>> extra_headers;  // (include name, text)
};

struct NvrtcOutput {
  std::string cubin;     // the ELF image, ready for cuModuleLoadData (PTX text for a compute_ arch)
  std::string log;       // warnings (empty when none)
  double compile_ms = 0; // wall time of nvrtcCompileProgram alone
};

// True when libnvrtc loads and binds. Never throws.
bool nvrtc_available();
// Why nvrtc_available() is false ("" when it is true).
const std::string& nvrtc_unavailable_reason();
// (major, minor) of the loaded NVRTC; throws when unavailable.
std::pair<int, int> nvrtc_version();
// What names the NVRTC this process compiles with, for cache keys: the
// library file's resolved path, size and modification time, found without
// loading it (so disk-cache hits never dlopen NVRTC); the loaded version
// when the library is only on the loader's search path. Throws when it
// must load NVRTC and cannot.
const std::string& nvrtc_identity();
// Where NVRTC and the CUDA headers it compiles against were found (tools and
// error reports): the library file that loaded ("" when none did), and the
// include folders passed to every compile.
std::string nvrtc_library_path();
const std::vector<std::string>& nvrtc_include_dirs();

// The architecture user kernels compile for on a GPU of architecture `arch`
// ("sm_90"): the same with its architecture-specific features ("sm_90a":
// Hopper's warpgroup MMA, which matmul2d uses) where it has them. Such code
// runs only on that exact architecture, as the kernel cache's entries do.
std::string with_arch_features(const std::string& arch);

// The options nvrtc_compile passes for `opts` (part of any cache key).
std::vector<std::string> nvrtc_options(const NvrtcOptions& opts);

// Compiles `source` (named `file_name` in diagnostics) to a cubin.
// Throws CompileError with the full log when NVRTC rejects it, and
// std::runtime_error when NVRTC is unavailable or fails otherwise.
NvrtcOutput nvrtc_compile(std::string_view source, std::string_view file_name,
                          const NvrtcOptions& opts = {});

// The sm_XY the cubin holds code for (from its ELF header), or -1 when the
// bytes are not a CUDA ELF image. Used by tests and sanity checks.
int cubin_sm_arch(std::string_view cubin);

}  // namespace alloy::jit
