// Compiles the op kernels ahead of time into an archive (see
// src/backend/cuda/aot_kernels.h), run by the build:
//
//   alloy_aot_build --out alloy_kernels.aot --archs 80,86,89,90,100,120 [--ptx 120] [--jobs N]
//   alloy_aot_build --list        (the modules' keys, one per line)
//
// Each module is compiled by NVRTC exactly as kernel() would compile it at
// run time (same source, same options), through the disk cache, so a rebuild
// recompiles only modules whose source or headers changed.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "backend/cuda/aot_kernels.h"
#include "backend/cuda/kernels.h"
#include "jit/cuda_compile.h"
#include "jit/digest.h"

namespace {

std::vector<int> parse_archs(const std::string& text) {
  std::vector<int> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty()) continue;
    if (item.rfind("sm_", 0) == 0) item = item.substr(3);
    out.push_back(std::atoi(item.c_str()));
  }
  return out;
}

int usage() {
  std::fprintf(stderr, "usage: alloy_aot_build --out FILE --archs 80,90,... [--ptx 90] [--jobs N] | --list\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string out_path, archs_text, ptx_text;
  unsigned jobs = std::max(1u, std::thread::hardware_concurrency());
  bool list = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--out") out_path = value();
    else if (a == "--archs") archs_text = value();
    else if (a == "--ptx") ptx_text = value();
    else if (a == "--jobs") jobs = static_cast<unsigned>(std::max(1, std::atoi(value().c_str())));
    else if (a == "--list") list = true;
    else return usage();
  }
  const std::vector<alloy::cuda::CatalogEntry> set = alloy::cuda::aot_kernel_set();
  if (list) {
    for (const auto& e : set) std::printf("%s\n", e.key.c_str());
    return 0;
  }
  const std::vector<int> archs = parse_archs(archs_text), ptx = parse_archs(ptx_text);
  if (out_path.empty() || (archs.empty() && ptx.empty())) return usage();

  struct Target {
    int sm;
    bool ptx;
    alloy::jit::NvrtcOptions opts;
  };
  std::vector<Target> targets;
  for (int sm : archs) targets.push_back({sm, false, alloy::cuda::kernel_compile_options("sm_" + std::to_string(sm))});
  for (int sm : ptx) {
    targets.push_back({sm, true, alloy::cuda::kernel_compile_options("compute_" + std::to_string(sm))});
  }
  const std::string fingerprint = alloy::cuda::aot_fingerprint(targets.front().opts);

  struct Job {
    size_t entry, target;
    std::string image, error;
  };
  std::vector<Job> work;
  for (size_t t = 0; t < targets.size(); ++t) {
    for (size_t e = 0; e < set.size(); ++e) work.push_back({e, t, {}, {}});
  }
  std::printf("[aot] %zu op kernel modules x %zu targets on %u threads\n", set.size(), targets.size(), jobs);
  std::fflush(stdout);
  const auto t0 = std::chrono::steady_clock::now();
  std::atomic<size_t> next{0}, done{0};
  std::mutex print;
  auto worker = [&] {
    for (size_t i; (i = next.fetch_add(1)) < work.size();) {
      Job& j = work[i];
      const auto& e = set[j.entry];
      try {
        j.image = *alloy::jit::compile_cuda(e.source, "alloy_aot.cu", targets[j.target].opts);
      } catch (const std::exception& ex) {
        j.error = ex.what();
      }
      size_t d = ++done;
      if (d % 500 == 0) {
        std::lock_guard<std::mutex> lock(print);
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::printf("[aot] %zu/%zu (%.0f s)\n", d, work.size(), s);
        std::fflush(stdout);
      }
    }
  };
  std::vector<std::thread> threads;
  for (unsigned k = 0; k < jobs; ++k) threads.emplace_back(worker);
  for (auto& t : threads) t.join();

  alloy::jit::AotArchiveWriter writer;
  size_t failed = 0, bytes = 0;
  for (Job& j : work) {
    const auto& e = set[j.entry];
    if (!j.error.empty()) {
      if (++failed <= 5) std::fprintf(stderr, "[aot] %s failed:\n%s\n", e.key.c_str(), j.error.c_str());
      continue;
    }
    bytes += j.image.size();
    writer.add(e.key, alloy::jit::digest_hex(e.source), targets[j.target].sm, targets[j.target].ptx,
               std::move(j.image));
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (failed) {
    std::fprintf(stderr, "[aot] %zu of %zu compiles failed\n", failed, work.size());
    return 1;
  }
  writer.write(out_path, fingerprint);
  std::printf("[aot] wrote %s: %zu images, %.1f MB, in %.0f s\n", out_path.c_str(), writer.size(), bytes / 1e6, s);
  return 0;
}
