#include "backend/cuda/cublas.h"
#include "backend/cuda/fault.h"

#include "jit/cuda_libraries.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <type_traits>
#include <vector>

namespace alloy::cuda::cublas {

namespace {

using Handle = void*;
using Status = int;

struct Api {
  Status (*create)(Handle*) = nullptr;
  Status (*set_stream)(Handle, CUstream) = nullptr;
  Status (*set_math_mode)(Handle, int) = nullptr;
  Status (*gemm)(Handle, int, int, int, int, int, const void*, const void*, int, int, long long, const void*, int,
                 int, long long, const void*, void*, int, int, long long, int, int, int) = nullptr;
};

struct Loaded {
  Api api;
  bool ok = false;
  std::string reason;
};

Loaded load() {
  Loaded L;
  static const jit::cuda_libraries::LibrarySpec spec{
      "libcublas", {"libcublas.so.13", "libcublas.so.12"}, "cublas", "ALLOY_CUBLAS_LIBRARY"};
  void* lib = jit::cuda_libraries::open(spec, nullptr, &L.reason);
  if (!lib) return L;
  std::string missing;
  auto bind = [&](auto& slot, const char* name) { jit::cuda_libraries::bind(lib, slot, name, missing); };
  bind(L.api.create, "cublasCreate_v2");
  bind(L.api.set_stream, "cublasSetStream_v2");
  bind(L.api.set_math_mode, "cublasSetMathMode");
  bind(L.api.gemm, "cublasGemmStridedBatchedEx");
  if (!missing.empty()) L.reason = "libcublas lacks " + missing;
  L.ok = L.reason.empty();
  return L;
}

const Loaded& loaded() {
  static const Loaded L = load();
  return L;
}

}  // namespace

bool available() { return loaded().ok; }
const std::string& unavailable_reason() { return loaded().reason; }

namespace {

std::mutex handle_mutex;
Handle made_handle = nullptr;
unsigned made_in = 0;  // a GPU fault's rebuilt context needs a new handle (the old one is leaked)

// The handle of the current context, made on first use. Under handle_mutex.
Handle handle_locked(const Loaded& L) {
  if (!made_handle || made_in != context_generation()) {
    ensure_context();
    Handle h = nullptr;
    if (L.api.create(&h) != 0) throw std::runtime_error("[matmul] cublasCreate failed.");
    L.api.set_math_mode(h, 0);  // CUBLAS_DEFAULT_MATH: full fp32, no TF32
    made_handle = h;
    made_in = context_generation();
  }
  return made_handle;
}

}  // namespace

void prepare_handle() noexcept {
  try {
    const Loaded& L = loaded();
    if (!L.ok) return;
    std::lock_guard<std::mutex> lock(handle_mutex);
    handle_locked(L);
  } catch (...) {
  }
}

void gemm_strided_batched(CUstream stream, bool trans_a, bool trans_b, int m, int n, int k, const void* A,
                          int lda, long long stride_a, const void* B, int ldb, long long stride_b, void* C, int ldc,
                          long long stride_c, int batch, DataType type, ComputeType compute) {
  const Loaded& L = loaded();
  if (!L.ok) throw std::runtime_error("[matmul] cuBLAS is not available: " + L.reason);
  std::lock_guard<std::mutex> lock(handle_mutex);
  Handle handle = handle_locked(L);
  if (L.api.set_stream(handle, stream) != 0) throw std::runtime_error("[matmul] cublasSetStream failed.");
  const double one_d = 1.0, zero_d = 0.0;
  const float one_f[2] = {1.0f, 0.0f}, zero_f[2] = {0.0f, 0.0f};
  const void* alpha = compute == COMPUTE_64F ? static_cast<const void*>(&one_d) : one_f;
  const void* beta = compute == COMPUTE_64F ? static_cast<const void*>(&zero_d) : zero_f;
  Status st = L.api.gemm(handle, trans_a ? 1 : 0, trans_b ? 1 : 0, m, n, k, alpha, A, type, lda, stride_a, B, type,
                         ldb, stride_b, beta, C, type, ldc, stride_c, batch, compute, -1 /* CUBLAS_GEMM_DEFAULT */);
  if (st != 0) {
    throw std::runtime_error("[matmul] cublasGemmStridedBatchedEx failed with status " + std::to_string(st) + " (m=" +
                             std::to_string(m) + ", n=" + std::to_string(n) + ", k=" + std::to_string(k) + ").");
  }
}

}  // namespace alloy::cuda::cublas
