// Binds NVRTC at run time and compiles translation units to cubins.
// See nvrtc.h.
#include "jit/nvrtc.h"

#include "jit/cuda_libraries.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <string_view>

namespace alloy {
// Generated at build time from src/msl/runtime/*.h (cmake/embed.cmake).
const std::vector<std::pair<std::string_view, std::string_view>>& embedded_headers();
}  // namespace alloy

namespace alloy::jit {
namespace {

// NVRTC's C API, declared here so building needs no CUDA headers.
using nvrtcResult = int;
struct nvrtcProgramImpl;
using nvrtcProgram = nvrtcProgramImpl*;
constexpr nvrtcResult NVRTC_SUCCESS = 0;
constexpr nvrtcResult NVRTC_ERROR_COMPILATION = 6;

struct NvrtcApi {
  nvrtcResult (*version)(int*, int*) = nullptr;
  const char* (*error_string)(nvrtcResult) = nullptr;
  nvrtcResult (*create)(nvrtcProgram*, const char*, const char*, int, const char* const*,
                        const char* const*) = nullptr;
  nvrtcResult (*compile)(nvrtcProgram, int, const char* const*) = nullptr;
  nvrtcResult (*cubin_size)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*cubin)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*ptx_size)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*ptx)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*log_size)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*log)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*destroy)(nvrtcProgram*) = nullptr;
};

// Where NVRTC lives, found with stat() only. A process whose kernels all hit
// the disk cache needs NVRTC's identity (part of every key) and include
// directories (part of the options), but never the library itself, whose
// dlopen costs milliseconds.
struct Located {
  std::string identity;                   // "path:size:mtime" of the first file; "" if none
  std::vector<std::string> include_dirs;  // CUDA headers (+ cccl), existing ones only
};

struct Loaded {
  NvrtcApi api;
  bool ok = false;
  std::string reason;
  std::string library_path;  // the file that was loaded
};

const cuda_libraries::LibrarySpec& nvrtc_spec() {
  static const cuda_libraries::LibrarySpec spec{
      "libnvrtc", {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"}, "cuda_nvrtc", "ALLOY_NVRTC_LIBRARY",
      // NVRTC opens its builtins library by name at its first compile.
      "libnvrtc-builtins.so."};
  return spec;
}

Located locate() {
  Located L;
  // The file a dlopen would most likely take: its resolved path, size and
  // modification time change whenever that NVRTC is replaced.
  std::string first;
  for (const std::string& c : cuda_libraries::candidates(nvrtc_spec())) {
    struct stat st;
    if (c.find('/') == std::string::npos || stat(c.c_str(), &st) != 0) continue;
    char* real = realpath(c.c_str(), nullptr);
    first = real ? real : c;
    std::free(real);
    L.identity = first + ":" + std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
                 std::to_string(st.st_mtim.tv_nsec);
    first = c;  // the headers are found beside the path as found, not its link target
    break;
  }
  // Headers: cuda_fp16.h & co. for the kernels, and CCCL (cooperative
  // groups, libcu++), from where that NVRTC came from when they are there.
  L.include_dirs = cuda_libraries::header_dirs(first);
  return L;
}

const Located& located() {
  static const Located L = locate();
  return L;
}

Loaded load() {
  Loaded L;
  void* lib = cuda_libraries::open(nvrtc_spec(), &L.library_path, &L.reason);
  if (!lib) return L;
  NvrtcApi& a = L.api;
  std::string missing;
  auto bind = [&](auto& slot, const char* name) { cuda_libraries::bind(lib, slot, name, missing); };
  bind(a.version, "nvrtcVersion");
  bind(a.error_string, "nvrtcGetErrorString");
  bind(a.create, "nvrtcCreateProgram");
  bind(a.compile, "nvrtcCompileProgram");
  bind(a.cubin_size, "nvrtcGetCUBINSize");
  bind(a.cubin, "nvrtcGetCUBIN");
  bind(a.ptx_size, "nvrtcGetPTXSize");
  bind(a.ptx, "nvrtcGetPTX");
  bind(a.log_size, "nvrtcGetProgramLogSize");
  bind(a.log, "nvrtcGetProgramLog");
  bind(a.destroy, "nvrtcDestroyProgram");
  if (!missing.empty()) {
    L.reason = L.library_path + " lacks " + missing;
    return L;
  }
  L.ok = true;
  return L;
}

const Loaded& loaded() {
  static const Loaded L = load();
  return L;
}

std::string result_text(nvrtcResult r) {
  const char* s = loaded().api.error_string ? loaded().api.error_string(r) : nullptr;
  return s ? std::string(s) : "nvrtcResult " + std::to_string(r);
}

std::string arch_option(const std::string& arch) {
  std::string a = arch;
  if (a.rfind("sm_", 0) != 0 && a.rfind("compute_", 0) != 0) a = "sm_" + a;
  return "--gpu-architecture=" + a;
}

// Owns an nvrtcProgram.
struct Program {
  nvrtcProgram p = nullptr;
  ~Program() {
    if (p) loaded().api.destroy(&p);
  }
};

}  // namespace

bool nvrtc_available() { return loaded().ok; }

const std::string& nvrtc_unavailable_reason() { return loaded().reason; }

const std::string& nvrtc_identity() {
  static const std::string id = [] {
    if (!located().identity.empty()) return "file " + located().identity;
    auto [major, minor] = nvrtc_version();  // found only on the loader's path: ask the library
    return "version " + std::to_string(major) + "." + std::to_string(minor);
  }();
  return id;
}

std::string nvrtc_library_path() { return loaded().ok ? loaded().library_path : std::string(); }
const std::vector<std::string>& nvrtc_include_dirs() { return located().include_dirs; }

std::pair<int, int> nvrtc_version() {
  const Loaded& L = loaded();
  if (!L.ok) throw std::runtime_error("[nvrtc_version] NVRTC is not available: " + L.reason);
  int major = 0, minor = 0;
  L.api.version(&major, &minor);
  return {major, minor};
}

std::string with_arch_features(const std::string& arch) { return arch == "sm_90" ? "sm_90a" : arch; }

std::vector<std::string> nvrtc_options(const NvrtcOptions& opts) {
  std::vector<std::string> o;
  o.push_back(arch_option(opts.arch));
  o.push_back("--std=c++20");
  // Helper functions and struct methods in user headers carry no __device__.
  o.push_back("-default-device");
  // Skip texture, runtime-API and device-launch declarations: less to parse.
  o.push_back("--minimal");
  // The shared headers' integer builtins (mulhi, add_sat) widen to 128 bits.
  o.push_back("--device-int128");
  // Metal sources carry clang/GCC pragmas NVRTC does not know (fp contract,
  // diagnostics); they are harmless, so no warning for them.
  o.push_back("--diag-suppress=161");
  if (opts.math_mode == "fast") {
    o.push_back("--use_fast_math");
    o.push_back("-D__FAST_MATH__=1");  // as Metal's fast math defines it; kernels test it
  } else if (opts.math_mode != "safe" && opts.math_mode != "relaxed") {
    throw std::invalid_argument("[nvrtc_compile] math_mode must be safe, relaxed or fast, got '" +
                                opts.math_mode + "'");
  }
  if (opts.line_info) o.push_back("-lineinfo");
  if (opts.use_pch) o.push_back("--pch");
  for (const std::string& d : located().include_dirs) o.push_back("-I" + d);
  for (const std::string& e : opts.extra_options) o.push_back(e);
  return o;
}

NvrtcOutput nvrtc_compile(std::string_view source, std::string_view file_name, const NvrtcOptions& opts) {
  const Loaded& L = loaded();
  if (!L.ok) throw std::runtime_error("[nvrtc_compile] NVRTC is not available: " + L.reason);
  const NvrtcApi& a = L.api;

  // In-memory headers: the embedded runtime headers, then the caller's (a
  // caller's header of the same name wins: NVRTC takes the last).
  std::vector<std::string> names, texts;
  for (const auto& [name, text] : alloy::embedded_headers()) {
    names.emplace_back(name);
    texts.emplace_back(text);
  }
  for (const auto& [name, text] : opts.extra_headers) {
    names.push_back(name);
    texts.push_back(text);
  }
  std::vector<const char*> name_ptrs, text_ptrs;
  for (size_t i = 0; i < names.size(); ++i) {
    name_ptrs.push_back(names[i].c_str());
    text_ptrs.push_back(texts[i].c_str());
  }

  std::string src(source);
  std::string fname(file_name);
  Program prog;
  nvrtcResult r = a.create(&prog.p, src.c_str(), fname.c_str(), int(names.size()), text_ptrs.data(),
                           name_ptrs.data());
  if (r != NVRTC_SUCCESS) {
    throw std::runtime_error("[nvrtc_compile] nvrtcCreateProgram failed for " + fname + ": " + result_text(r));
  }

  std::vector<std::string> options = nvrtc_options(opts);
  std::vector<const char*> option_ptrs;
  for (const std::string& o : options) option_ptrs.push_back(o.c_str());

  auto t0 = std::chrono::steady_clock::now();
  r = a.compile(prog.p, int(option_ptrs.size()), option_ptrs.data());
  auto t1 = std::chrono::steady_clock::now();

  NvrtcOutput out;
  out.compile_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  size_t log_size = 0;
  if (a.log_size(prog.p, &log_size) == NVRTC_SUCCESS && log_size > 1) {
    out.log.resize(log_size);
    a.log(prog.p, out.log.data());
    while (!out.log.empty() && (out.log.back() == '\0' || out.log.back() == '\n')) out.log.pop_back();
  }
  if (r != NVRTC_SUCCESS) {
    std::string all_options;
    for (const std::string& o : options) all_options += " " + o;
    std::string msg = "[nvrtc_compile] NVRTC failed to compile " + fname + " (" + result_text(r) +
                      "; options:" + all_options + "):\n" + out.log;
    if (r == NVRTC_ERROR_COMPILATION) throw CompileError(msg, out.log);
    throw std::runtime_error(msg);
  }
  size_t size = 0;
  if (opts.arch.rfind("compute_", 0) == 0) {  // a virtual architecture: PTX
    r = a.ptx_size(prog.p, &size);
    if (r != NVRTC_SUCCESS || size == 0) throw std::runtime_error("[nvrtc_compile] no PTX for " + fname);
    out.cubin.resize(size);
    r = a.ptx(prog.p, out.cubin.data());
    if (r != NVRTC_SUCCESS) throw std::runtime_error("[nvrtc_compile] nvrtcGetPTX failed: " + result_text(r));
    while (!out.cubin.empty() && out.cubin.back() == '\0') out.cubin.pop_back();
    return out;
  }
  r = a.cubin_size(prog.p, &size);
  if (r != NVRTC_SUCCESS || size == 0) {
    throw std::runtime_error("[nvrtc_compile] no cubin for " + fname + " (" + result_text(r) +
                             "); was a virtual architecture requested?");
  }
  out.cubin.resize(size);
  r = a.cubin(prog.p, out.cubin.data());
  if (r != NVRTC_SUCCESS) throw std::runtime_error("[nvrtc_compile] nvrtcGetCUBIN failed: " + result_text(r));
  return out;
}

int cubin_sm_arch(std::string_view cubin) {
  // ELF64 header: magic, class 2 (64-bit), e_machine 190 (EM_CUDA) at offset
  // 18, e_flags at 48. The sm number sits in e_flags bits 0-7 up to ELF ABI
  // version 7 and in bits 8-15 from version 8 (CUDA 12.8+).
  if (cubin.size() < 64 || std::memcmp(cubin.data(), "\x7f" "ELF", 4) != 0 || cubin[4] != 2) return -1;
  auto u16 = [&](size_t off) { return unsigned(uint8_t(cubin[off])) | unsigned(uint8_t(cubin[off + 1])) << 8; };
  if (u16(18) != 190) return -1;
  uint32_t flags = u16(48) | uint32_t(u16(50)) << 16;
  unsigned abi_version = uint8_t(cubin[8]);
  return abi_version >= 8 ? int((flags >> 8) & 0xff) : int(flags & 0xff);
}

}  // namespace alloy::jit
