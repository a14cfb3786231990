#include "jit/cpu_kernel.h"

#include <csignal>

#include "jit/cpu_interrupt.h"

#include "alloy/errors.h"
#include "jit/cpu_faults.h"

#include <dlfcn.h>
#include <unistd.h>

#include <alloy/detail/thread_pool.h>

#include <atomic>
#include <cfenv>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <thread>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "jit/cpu_fibers.h"
#include "jit/embedded_headers.h"
#include "jit/digest.h"

#ifndef ALLOY_VERSION
#define ALLOY_VERSION "unknown"
#endif

namespace alloy::jit {
namespace {

constexpr unsigned kMaxThreadsPerThreadgroup = 1024;  // Metal's limit, which MLX checks
constexpr size_t kErrorBytes = 2048;

// dlopen needs a file; glibc treats a second dlopen of an already-loaded path
// as the same library, so each load gets a fresh name (key, counter), in a
// directory of this process that only this user can enter (no one else can
// swap the file between its write and the dlopen). The file is unlinked once
// loaded: the mapping keeps it alive, nothing is left.
void* load_shared_object(const std::string& bytes, const std::string& key) {
  static std::atomic<unsigned long> counter{0};
  static const struct PrivateDir {
    std::filesystem::path path = make_private_temp_dir("alloy-kernels-");
    ~PrivateDir() {
      if (!path.empty()) ::rmdir(path.c_str());  // empty: every file was unlinked after its load
    }
  } private_dir;
  const std::filesystem::path& dir = private_dir.path;
  if (dir.empty()) throw std::runtime_error("[alloy::jit::compile_cpu] cannot create a private directory for kernels");
  std::filesystem::path path = dir / ("kernel-" + key.substr(0, 16) + "-" + std::to_string(counter.fetch_add(1)) + ".so");
  if (!write_file_atomically(path, bytes)) {
    throw std::runtime_error("[alloy::jit::compile_cpu] cannot write kernel " + key + " to " + path.string());
  }
  // A kernel linked with -ffast-math (math_mode "fast") carries GCC's
  // crtfastmath, whose constructor sets flush-to-zero and denormals-are-zero
  // in the loading thread's floating-point control (MXCSR, FPCR) for good:
  // every later kernel and numpy call on that thread would flush subnormals
  // (sigmoid(-88) became 0). The thread's environment is put back.
  std::fenv_t fp_env;
  std::fegetenv(&fp_env);
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  std::fesetenv(&fp_env);
  std::string why = handle ? "" : std::string(::dlerror());
  ::unlink(path.c_str());
  if (!handle) throw std::runtime_error("[alloy::jit::compile_cpu] cannot load kernel " + key + ": " + why);
  return handle;
}

}  // namespace

std::string cpu_cache_key(const std::string& source, const CompileOptions& options) {
  std::string compiler = host_compiler_path(options);
  KeyBuilder key;
  key.add("kind", "alloy-cpu-shared-object-v1")
      .add("alloy_version", ALLOY_VERSION)
      .add("compiler", compiler)
      .add("compiler_version", host_compiler_identity(compiler))
      .add("runtime_headers", embedded_headers_digest())
      .add("entry", options.entry)
      .add("source", source);
  for (const auto& f : requested_compile_flags(options)) key.add("flag", f);
  if (options.native) key.add("target_cpu", host_cpu_identity());
  return key.hex();
}

std::shared_ptr<CpuKernel> compile_cpu(const std::string& source, const CompileOptions& options, Cache* cache) {
  if (!cache) cache = &Cache::global();
  const std::string key = cpu_cache_key(source, options);

  // One loaded kernel per (cache, key) for the process.
  static std::mutex mutex;
  static std::unordered_map<std::string, std::shared_ptr<CpuKernel>> loaded;
  const std::string loaded_key = cache->dir().string() + "|" + key;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = loaded.find(loaded_key);
    if (it != loaded.end()) return it->second;
  }

  const std::string compiler = host_compiler_path(options);
  Cache::Bytes bytes = cache->get_or_build(key, [&](std::vector<Cache::SideFile>& side) {
    side.push_back({".cpp", source});
    return compile_shared_object(compiler, host_compile_flags(options), runtime_include_dir(cache->dir()), source);
  });

  void* handle = load_shared_object(*bytes, key);
  auto entry = reinterpret_cast<CpuKernel::Entry>(::dlsym(handle, options.entry.c_str()));
  if (!entry) {
    throw std::runtime_error("[alloy::jit::compile_cpu] the compiled kernel " + key + " has no symbol '" +
                             options.entry + "' (is it declared extern \"C\" ALLOY_EXPORT?)");
  }
  auto kernel = std::make_shared<CpuKernel>(key, handle, entry);
  std::lock_guard<std::mutex> lock(mutex);
  return loaded.emplace(loaded_key, kernel).first->second;
}

bool CpuKernel::launch(alloy_msl::cpu::Launch base, double timeout, std::size_t buffer_count,
                       const std::vector<PrivateOutput>& private_outputs) const {
  for (int d = 0; d < 3; ++d) {
    if (base.threadgroup[d] == 0) {
      throw std::invalid_argument("[alloy::jit::CpuKernel::launch] threadgroup dimension " + std::to_string(d) +
                                  " is 0; every dimension must be at least 1");
    }
  }
  if (base.grid[0] == 0 || base.grid[1] == 0 || base.grid[2] == 0) return false;  // no threads
  for (int d = 0; d < 3; ++d) base.threadgroup[d] = std::min(base.threadgroup[d], base.grid[d]);
  uint64_t per_group = uint64_t(base.threadgroup[0]) * base.threadgroup[1] * base.threadgroup[2];
  if (per_group > kMaxThreadsPerThreadgroup) {
    throw std::invalid_argument("[alloy::jit::CpuKernel::launch] threadgroup (" + std::to_string(base.threadgroup[0]) +
                                ", " + std::to_string(base.threadgroup[1]) + ", " + std::to_string(base.threadgroup[2]) +
                                ") has " + std::to_string(per_group) + " threads; the limit is " +
                                std::to_string(kMaxThreadsPerThreadgroup));
  }
  uint64_t groups = 1;
  for (int d = 0; d < 3; ++d) groups *= (base.grid[d] + base.threadgroup[d] - 1) / base.threadgroup[d];

  auto& pool = alloy::detail::ThreadPool::global();
  // A few chunks per thread balance uneven groups; each chunk is a range of groups.
  uint64_t chunks = std::min<uint64_t>(groups, pool.size() * 4);
  std::vector<char> errors(chunks * kErrorBytes, 0);
  std::unique_ptr<PrivateOutputs> copies;
  const unsigned long long threads = 1ull * base.grid[0] * base.grid[1] * base.grid[2];
  base.plain_adds = 0;
  if (!private_outputs.empty() && worth_private_outputs(private_outputs, threads, chunks > 1 ? pool.size() : 1)) {
    copies = std::make_unique<PrivateOutputs>(base.buffers, buffer_count, private_outputs, pool.size());
    base.plain_adds = 1;
  }
  std::atomic<int> cancel{0};
  std::atomic<bool> signalled{false};  // a fault signal stopped some chunk
  base.fibers = cpu_fiber_api();
  base.cancel = reinterpret_cast<const int*>(&cancel);
  static_assert(sizeof(std::atomic<int>) == sizeof(int), "cancel flag layout");

  // The watchdog of a launch with a timeout: at the deadline it cancels the
  // threadgroups not started and stops the threads inside the kernel. An
  // interrupt (SIGINT, SIGALRM: cpu_interrupt.h) stops it the same way.
  StoppableThreads stoppable;
  arm_interrupts();
  InterruptScope interrupt(&cancel, &stoppable);
  std::atomic<bool> timed_out{false};
  std::mutex watch_mutex;
  std::condition_variable watch_cv;
  bool finished = false;
  std::thread watchdog;
  if (timeout > 0) {
    watchdog = std::thread([&] {
      std::unique_lock<std::mutex> lock(watch_mutex);
      auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout);
      if (watch_cv.wait_until(lock, deadline, [&] { return finished; })) return;
      timed_out.store(true);
      cancel.store(1, std::memory_order_relaxed);
      stoppable.stop_all();
    });
  }
  struct StopWatchdog {
    std::mutex& m;
    std::condition_variable& cv;
    bool& finished;
    std::thread& t;
    ~StopWatchdog() {
      if (!t.joinable()) return;
      {
        std::lock_guard<std::mutex> lock(m);
        finished = true;
      }
      cv.notify_all();
      t.join();
    }
  } stop_watchdog{watch_mutex, watch_cv, finished, watchdog};

  pool.parallel_for(chunks, [&](size_t c) {
    alloy_msl::cpu::Launch L = base;
    L.tg_begin = groups * c / chunks;
    L.tg_end = groups * (c + 1) / chunks;
    L.error = &errors[c * kErrorBytes];
    L.error_size = kErrorBytes;
    std::string fault;
    if (timed_out.load() || interrupt.signal()) return;  // stopped before this chunk started
    std::size_t slot = 0;
    if (copies) {
      try {
        slot = copies->acquire();
      } catch (const std::bad_alloc&) {
        std::snprintf(L.error, kErrorBytes, "out of memory for a copy of its add-only outputs");
        cancel.store(1, std::memory_order_relaxed);
        return;
      }
      L.buffers = copies->buffers(slot);
    }
    struct Release {
      PrivateOutputs* c;
      std::size_t s;
      ~Release() {
        if (c) c->release(s);
      }
    } release{copies.get(), slot};
    if (!run_catching_faults([&] { entry_(&L); }, fault, &stoppable)) {
      if (!timed_out.load() && !interrupt.signal()) signalled.store(true, std::memory_order_relaxed);
      std::snprintf(L.error, kErrorBytes, "%s in threadgroups %llu..%llu of %llu (the launch was stopped)",
                    fault.c_str(), static_cast<unsigned long long>(L.tg_begin),
                    static_cast<unsigned long long>(L.tg_end - 1), static_cast<unsigned long long>(groups));
    }
    if (L.error[0]) cancel.store(1, std::memory_order_relaxed);
  });
  if (const int sig = interrupt.signal()) {
    throw alloy::KernelInterrupted("[alloy::jit::CpuKernel::launch] kernel " + key_.substr(0, 16) + " was stopped by " +
                                   (sig == SIGINT ? "SIGINT" : sig == SIGALRM ? "SIGALRM" : "a signal") +
                                   "; its outputs are not valid");
  }
  if (timed_out.load()) {
    char seconds[32];
    std::snprintf(seconds, sizeof(seconds), "%g", timeout);
    throw alloy::KernelTimeout("[alloy::jit::CpuKernel::launch] kernel " + key_.substr(0, 16) +
                                     " ran past its timeout of " + seconds + " s and was stopped");
  }
  for (uint64_t c = 0; c < chunks; ++c) {
    if (errors[c * kErrorBytes] && signalled.load()) {
      throw CpuKernelFault("[alloy::jit::CpuKernel::launch] kernel " + key_.substr(0, 16) + " failed: " +
                           std::string(&errors[c * kErrorBytes]));
    }
    if (errors[c * kErrorBytes]) {
      throw std::runtime_error("[alloy::jit::CpuKernel::launch] kernel " + key_.substr(0, 16) + " failed: " +
                               std::string(&errors[c * kErrorBytes]));
    }
  }
  if (copies) copies->merge(pool);
  return base.plain_adds != 0;
}

}  // namespace alloy::jit
