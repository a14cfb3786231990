#include "jit/host_compiler.h"

#include "jit/cache.h"

#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "jit/cache.h"
#include "jit/compile_error.h"

#ifndef ALLOY_HOST_CXX
#define ALLOY_HOST_CXX "c++"
#endif

namespace alloy::jit {
namespace {

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

// Runs `command` through the shell; returns its exit status and combined output.
int run_command(const std::string& command, std::string& output) {
  output.clear();
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return -1;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) output.append(buf, n);
  int status = ::pclose(pipe);
  if (status == -1) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

class TempDir {
 public:
  TempDir() : path_(make_private_temp_dir("alloy-build-")) {
    if (path_.empty()) {
      throw std::runtime_error("[alloy::jit::compile_shared_object] cannot create a temporary directory under $TMPDIR "
                               "or /tmp");
    }
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace

namespace {

bool on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(start, end - start);
    if (!dir.empty() && ::access((dir + "/" + name).c_str(), X_OK) == 0) return true;
    start = end + 1;
  }
  return false;
}

// The compiler Alloy was built with, where it exists (a source build), else
// the first C++ compiler on PATH (an installed wheel on another machine).
const std::string& default_compiler() {
  static const std::string compiler = [] {
    std::string built = ALLOY_HOST_CXX;
    if (built.find('/') == std::string::npos || ::access(built.c_str(), X_OK) == 0) return built;
    for (const char* name : {"c++", "g++", "clang++"})
      if (on_path(name)) return std::string(name);
    return built;  // not found: running it gives an error that names it
  }();
  return compiler;
}

}  // namespace

std::string host_compiler_path(const CompileOptions& options) {
  if (!options.compiler.empty()) return options.compiler;
  if (const char* env = std::getenv("ALLOY_CXX"); env && *env) return env;
  return default_compiler();
}

const std::string& host_compiler_identity(const std::string& compiler) {
  static std::mutex mutex;
  static std::unordered_map<std::string, std::string> known;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = known.find(compiler);
  if (it != known.end()) return it->second;
  std::string out;
  int rc = run_command(shell_quote(compiler) + " --version", out);
  if (rc != 0) {
    throw std::runtime_error("[alloy::jit::host_compiler_identity] cannot run the host compiler '" + compiler +
                             "' (exit status " + std::to_string(rc) + "): " + out +
                             " Set ALLOY_CXX to a C++20 compiler (g++ or clang++).");
  }
  return known.emplace(compiler, out).first->second;
}

const std::string& host_cpu_identity() {
  static const std::string id = [] {
    std::string s;
    struct utsname u;
    if (uname(&u) == 0) s += u.machine;
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
      // x86 lists "flags", Arm "Features"; the model name covers -mtune.
      if (line.rfind("flags", 0) == 0 || line.rfind("Features", 0) == 0 || line.rfind("model name", 0) == 0 ||
          line.rfind("CPU part", 0) == 0) {
        s += "\n" + line;
      }
      if (line.empty() && s.find('\n') != std::string::npos) break;  // the first CPU is enough
    }
    return s;
  }();
  return id;
}

namespace {

// Tuning flags are the compiler's own and change between releases:
// parameters (`--param=name=value`; GCC 13 renamed max-unswitch-level to
// max-unswitch-depth) and GCC's `-fvect-cost-model=`, neither of which clang
// takes. A translation asks for them by GCC 12's names; the host compiler
// gets the name it accepts, or nothing (a kernel is then slower, never
// refused). Each (compiler, flag) is tried once per process.
bool is_tuning_flag(const std::string& f) {
  return f.rfind("--param=", 0) == 0 || f.rfind("-fvect-cost-model=", 0) == 0;
}

const char* const kParamRenames[][2] = {{"max-unswitch-level", "max-unswitch-depth"}};

bool compiler_accepts(const std::string& compiler, const std::string& flag) {
  std::string out;
  return run_command(shell_quote(compiler) + " " + shell_quote(flag) + " -fsyntax-only -x c++ /dev/null", out) == 0;
}

std::string accepted_tuning_flag(const std::string& compiler, const std::string& flag) {
  static std::mutex mutex;
  static std::unordered_map<std::string, std::string> known;
  const std::string key = compiler + '\n' + flag;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = known.find(key); it != known.end()) return it->second;
  }
  std::string chosen;
  if (compiler_accepts(compiler, flag)) {
    chosen = flag;
  } else if (flag.rfind("--param=", 0) == 0) {
    const std::string body = flag.substr(std::string("--param=").size());
    const std::string name = body.substr(0, body.find('='));
    for (const auto& rename : kParamRenames) {
      if (name != rename[0]) continue;
      const std::string other = "--param=" + std::string(rename[1]) + body.substr(name.size());
      if (compiler_accepts(compiler, other)) chosen = other;
    }
  }
  std::lock_guard<std::mutex> lock(mutex);
  return known.emplace(key, chosen).first->second;
}

}  // namespace

std::vector<std::string> requested_compile_flags(const CompileOptions& options) {
  if (options.optimization < 0 || options.optimization > 3) {
    throw std::invalid_argument("[alloy::jit::requested_compile_flags] optimization must be 0 to 3, got " +
                                std::to_string(options.optimization));
  }
  std::vector<std::string> flags = {"-std=c++20", "-O" + std::to_string(options.optimization), "-fvect-cost-model=cheap", "-fPIC", "-shared", "-fvisibility=hidden",
                                    "-fno-exceptions", "-fno-rtti", "-fno-math-errno", "-fno-plt",
                                    "-fdiagnostics-color=never", "-Wno-unused-parameter", "-Wno-unused-variable",
                                    // Metal and CUDA have no variable-length arrays; g++ would take one.
                                    "-Werror=vla"};
  if (options.native) flags.push_back("-march=native");
  if (options.math_mode == "fast") {
    flags.push_back("-ffast-math");
  } else if (options.math_mode == "relaxed") {
    flags.insert(flags.end(), {"-fno-signed-zeros", "-fno-trapping-math", "-ffp-contract=fast"});
  } else if (options.math_mode != "safe") {
    throw std::invalid_argument("[alloy::jit::requested_compile_flags] math_mode must be 'safe', 'relaxed' or 'fast', got '" +
                                options.math_mode + "'");
  }
  flags.insert(flags.end(), options.extra_flags.begin(), options.extra_flags.end());
  return flags;
}

std::vector<std::string> host_compile_flags(const CompileOptions& options) {
  std::vector<std::string> flags;
  for (std::string& f : requested_compile_flags(options)) {
    if (!is_tuning_flag(f)) {
      flags.push_back(std::move(f));
    } else if (std::string accepted = accepted_tuning_flag(host_compiler_path(options), f); !accepted.empty()) {
      flags.push_back(std::move(accepted));
    }
  }
  return flags;
}

std::string compile_shared_object(const std::string& compiler, const std::vector<std::string>& flags,
                                  const std::filesystem::path& include_dir, const std::string& source) {
  TempDir tmp;
  std::filesystem::path src = tmp.path() / "kernel.cpp", out = tmp.path() / "kernel.so";
  if (!write_file_atomically(src, source)) {
    throw std::runtime_error("[alloy::jit::compile_shared_object] cannot write " + src.string());
  }
  std::string cmd = shell_quote(compiler);
  for (const auto& f : flags) cmd += " " + shell_quote(f);
  cmd += " -I" + shell_quote(include_dir.string()) + " -o " + shell_quote(out.string()) + " " + shell_quote(src.string());
  std::string log;
  int rc = run_command(cmd, log);
  if (rc != 0 && log.find("_Float16 is not supported on this target") != std::string::npos) {
    // Every kernel fails so, whatever its source: name the compiler and the
    // fix first (the kernel's error quotes the log).
    const std::string why = "the host compiler '" + compiler +
                            "' has no _Float16 (Metal's half) for this CPU: clang before 15 has it on x86 only with "
                            "AVX512-FP16. Set ALLOY_CXX to g++ (12 or later) or clang++ 15 or later.\n";
    throw CompileError("[alloy::jit::compile_cpu] " + why + "compiler output:\n" + log, why + log);
  }
  if (rc != 0) {
    throw CompileError("[alloy::jit::compile_cpu] the host compiler failed (exit status " + std::to_string(rc) +
                           ") on the translated kernel; compiler output:\n" + log,
                       log);
  }
  std::ifstream in(out, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (!in || bytes.str().empty()) {
    throw std::runtime_error("[alloy::jit::compile_shared_object] the compiler reported success but wrote no " +
                             out.string() + "; output:\n" + log);
  }
  return bytes.str();
}

}  // namespace alloy::jit
