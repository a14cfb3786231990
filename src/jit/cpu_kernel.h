// JIT for the CPU: a translated kernel (alloy::msl::Target::Cpp) compiled by the
// host compiler, cached by content, loaded, and launched over the thread pool.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "jit/cache.h"
#include "jit/compile_error.h"
#include "jit/host_compiler.h"
#include "jit/cpu_private_outputs.h"
#include "msl/runtime/cpu_launch.h"

namespace alloy::jit {

// A launch stopped by a memory fault in the kernel's code (SIGSEGV, SIGBUS,
// SIGFPE, SIGILL: cpu_faults.h), as opposed to a failure the executor
// reports (a barrier divergence): a caller may rerun it with checks.
class CpuKernelFault : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class CpuKernel {
 public:
  using Entry = void (*)(const alloy_msl::cpu::Launch*);
  CpuKernel(std::string key, void* handle, Entry entry) : key_(std::move(key)), handle_(handle), entry_(entry) {}
  CpuKernel(const CpuKernel&) = delete;
  CpuKernel& operator=(const CpuKernel&) = delete;

  // Runs the whole grid. From `base` it reads buffers, shapes, strides, ndims,
  // grid and threadgroup (clamped here to the grid); it sets the threadgroup
  // ranges, fiber services, error buffers and cancel flag itself, and splits the
  // threadgroups over alloy::detail::ThreadPool::global(). Throws
  // std::invalid_argument for a bad grid/threadgroup, CpuKernelFault when a
  // fault signal stopped it, and std::runtime_error with the executor's
  // message when the kernel fails otherwise (barrier divergence, deadlock).
  // With `timeout` > 0 seconds, a watchdog stops the launch when it runs
  // longer (its threads jump out of the kernel, see cpu_faults.h) and launch
  // throws alloy::KernelTimeout.
  //
  // `private_outputs`: the outputs the kernel only adds to (of a table of
  // `buffer_count` buffers); when copies pay (worth_private_outputs), each
  // worker adds into its own with plain adds and launch sums them
  // (jit/cpu_private_outputs.h), otherwise the adds stay atomic. Returns
  // whether the adds were plain (copies, or a single worker).
  bool launch(alloy_msl::cpu::Launch base, double timeout = 0, std::size_t buffer_count = 0,
              const std::vector<PrivateOutput>& private_outputs = {}) const;

  const std::string& key() const { return key_; }  // the cache key
  Entry entry() const { return entry_; }

 private:
  std::string key_;
  void* handle_;  // dlopen handle, never closed (kernels live for the process)
  Entry entry_;
};

// Compiles (or finds in `cache`, default Cache::global()) the translation unit
// `source` and loads it. The key hashes the source, the compiler's path and
// --version, the flags, the target CPU, the runtime headers and Alloy's version.
// The generated source is stored beside the binary (<key>.cpp). Throws
// CompileError (raw compiler output in log()) when the compiler rejects it.
std::shared_ptr<CpuKernel> compile_cpu(const std::string& source, const CompileOptions& options = {},
                                       Cache* cache = nullptr);

// The cache key compile_cpu uses for `source` and `options`.
std::string cpu_cache_key(const std::string& source, const CompileOptions& options);

}  // namespace alloy::jit
