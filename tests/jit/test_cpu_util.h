// Helpers for the CPU JIT tests: a private cache directory, compiling a
// hand-written translated kernel, launching it, and seeded random inputs.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "jit/cpu_kernel.h"

namespace alloy::jit::test {

// A fresh cache directory for this test process, removed at exit.
// The path is never destroyed: the exit handler runs after function-local
// statics are gone, and must still see it.
inline const std::filesystem::path& test_cache_dir() {
  static const std::filesystem::path* dir = [] {
    std::string pattern = (std::filesystem::temp_directory_path() / "alloy-jit-test-XXXXXX").string();
    if (!mkdtemp(pattern.data())) throw std::runtime_error("[test_cache_dir] mkdtemp failed");
    auto* p = new std::filesystem::path(pattern);
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(*dir, ec);
    });
    return p;
  }();
  return *dir;
}

inline Cache& test_cache() {
  static Cache cache(test_cache_dir() / "shared");
  return cache;
}

// Compiles `source`; on a compile error, fails the test with the compiler's log.
inline std::shared_ptr<CpuKernel> compile(const std::string& source, const CompileOptions& options = {},
                                          Cache* cache = nullptr) {
  try {
    return compile_cpu(source, options, cache ? cache : &test_cache());
  } catch (const CompileError& e) {
    ADD_FAILURE() << "compile failed:\n" << e.log();
    throw;
  }
}

struct Dims {
  unsigned x = 1, y = 1, z = 1;
};

// Launches with buffers (inputs then outputs) and optional shape info for input 0.
inline void launch(const CpuKernel& k, std::vector<void*> buffers, Dims grid, Dims tg,
                   const std::vector<const int*>& shapes = {}, const std::vector<const int64_t*>& strides = {},
                   const std::vector<int>& ndims = {}) {
  alloy_msl::cpu::Launch L{};
  L.buffers = buffers.data();
  L.shapes = shapes.empty() ? nullptr : shapes.data();
  L.strides = strides.empty() ? nullptr : strides.data();
  L.ndims = ndims.empty() ? nullptr : ndims.data();
  L.grid[0] = grid.x;
  L.grid[1] = grid.y;
  L.grid[2] = grid.z;
  L.threadgroup[0] = tg.x;
  L.threadgroup[1] = tg.y;
  L.threadgroup[2] = tg.z;
  k.launch(L);
}

// A random engine whose seed is printed, so a failure can be replayed
// (ALLOY_TEST_SEED=<seed> fixes it).
inline std::mt19937_64 seeded_rng(const char* test) {
  uint64_t seed = std::chrono::steady_clock::now().time_since_epoch().count();
  if (const char* env = std::getenv("ALLOY_TEST_SEED")) seed = std::strtoull(env, nullptr, 10);
  std::cout << "[seed] " << test << ": " << seed << "\n";
  return std::mt19937_64(seed);
}

inline std::vector<float> random_floats(std::mt19937_64& rng, size_t n, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

inline std::vector<int> random_ints(std::mt19937_64& rng, size_t n, int lo, int hi) {
  std::uniform_int_distribution<int> d(lo, hi);
  std::vector<int> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

template <class T> std::vector<T> poisoned(size_t n) {
  if constexpr (std::numeric_limits<T>::has_quiet_NaN) return std::vector<T>(n, std::numeric_limits<T>::quiet_NaN());
  else return std::vector<T>(n, T(0x5a5a5a5a));
}

// The contract's translation-unit shape around a kernel: runtime include, #line,
// the kernel text, and the CPU glue `glue` (the body of alloy_kernel_main).
inline std::string translation_unit(const std::string& kernel, const std::string& glue) {
  return "#include \"metal_cpu.h\"\n#line 1 \"source\"\n" + kernel +
         "\n#line 1 \"glue\"\nextern \"C\" ALLOY_EXPORT void alloy_kernel_main(const alloy_msl::cpu::Launch* L) {\n" +
         glue + "\n}\n";
}

}  // namespace alloy::jit::test
