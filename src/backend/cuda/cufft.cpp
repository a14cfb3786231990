#include "backend/cuda/cufft.h"
#include "backend/cuda/fault.h"

#include "jit/cuda_libraries.h"

#include <dlfcn.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <vector>

namespace alloy::cuda::cufft {

namespace {

using Handle = int;  // cufftHandle
using Result = int;  // cufftResult

struct Api {
  Result (*plan_many)(Handle*, int, int*, int*, int, int, int*, int, int, int, int) = nullptr;
  Result (*set_stream)(Handle, CUstream) = nullptr;
  Result (*exec_c2c)(Handle, void*, void*, int) = nullptr;
  Result (*exec_r2c)(Handle, void*, void*) = nullptr;
  Result (*exec_c2r)(Handle, void*, void*) = nullptr;
};

struct Loaded {
  Api api;
  bool ok = false;
  std::string reason;
};

Loaded load() {
  Loaded L;
  static const jit::cuda_libraries::LibrarySpec spec{
      "libcufft", {"libcufft.so.12", "libcufft.so.11"}, "cufft", "ALLOY_CUFFT_LIBRARY"};
  void* lib = jit::cuda_libraries::open(spec, nullptr, &L.reason);
  if (!lib) return L;
  std::string missing;
  auto bind = [&](auto& slot, const char* name) { jit::cuda_libraries::bind(lib, slot, name, missing); };
  bind(L.api.plan_many, "cufftPlanMany");
  bind(L.api.set_stream, "cufftSetStream");
  bind(L.api.exec_c2c, "cufftExecC2C");
  bind(L.api.exec_r2c, "cufftExecR2C");
  bind(L.api.exec_c2r, "cufftExecC2R");
  if (!missing.empty()) L.reason = "libcufft lacks " + missing;
  L.ok = L.reason.empty();
  return L;
}

const Loaded& loaded() {
  static const Loaded L = load();
  return L;
}

void check(Result r, const char* call) {
  if (r != 0) throw std::runtime_error(std::string("[fft] ") + call + " failed with cufftResult " + std::to_string(r) + ".");
}

}  // namespace

bool available() { return loaded().ok; }
const std::string& unavailable_reason() { return loaded().reason; }

void execute(CUstream stream, Type type, long long n, long long batch, bool inverse, void* in, void* out) {
  const Loaded& L = loaded();
  if (!L.ok) throw std::runtime_error("[fft] cuFFT is not available: " + L.reason);
  if (n > (1LL << 31) - 1 || batch > (1LL << 31) - 1) {
    throw std::invalid_argument("[fft] transforms or batches above 2^31 - 1 are not supported on the GPU.");
  }
  // Plans are kept per (type, n, batch, stream): making one allocates and
  // may compile, and model code repeats the same shapes. A plan's work area
  // must not be used by two streams at once, hence the stream in the key.
  // One lock serialises set_stream + exec.
  static std::mutex mutex;
  static auto* plans = new std::map<std::tuple<int, long long, long long, CUstream>, Handle>();  // never freed
  std::lock_guard<std::mutex> lock(mutex);
  static unsigned made_in = 0;  // plans of a context a GPU fault destroyed are dropped (leaked)
  if (made_in != context_generation()) {
    plans->clear();
    made_in = context_generation();
  }
  auto key = std::make_tuple(static_cast<int>(type), n, batch, stream);
  auto it = plans->find(key);
  if (it == plans->end()) {
    ensure_context();
    Handle h = 0;
    int dims[1] = {static_cast<int>(n)};
    // Dense rows: nullptr embeds; distances are the row lengths of each side.
    const int complex_len = static_cast<int>(type == C2C ? n : n / 2 + 1);
    const int idist = type == C2R ? complex_len : static_cast<int>(n);
    const int odist = type == R2C ? complex_len : static_cast<int>(n);
    check(L.api.plan_many(&h, 1, dims, nullptr, 1, idist, nullptr, 1, odist, type, static_cast<int>(batch)),
          "cufftPlanMany");
    it = plans->emplace(key, h).first;
  }
  check(L.api.set_stream(it->second, stream), "cufftSetStream");
  switch (type) {
    case C2C: check(L.api.exec_c2c(it->second, in, out, inverse ? 1 : -1), "cufftExecC2C"); break;
    case R2C: check(L.api.exec_r2c(it->second, in, out), "cufftExecR2C"); break;
    case C2R: check(L.api.exec_c2r(it->second, in, out), "cufftExecC2R"); break;
  }
}

}  // namespace alloy::cuda::cufft
