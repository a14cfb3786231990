#include "backend/cuda/cusolver.h"
#include "backend/cuda/fault.h"

#include "jit/cuda_libraries.h"

#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <type_traits>

#include "alloy/allocator.h"

namespace alloy::cuda::cusolver {

namespace {

using Handle = void*;
using Status = int;
// cublasFillMode_t, cublasOperation_t and cusolverEigMode_t values (cublas_api.h, cusolver_common.h).
constexpr int kLower = 0, kUpper = 1, kNoTrans = 0, kNoVectors = 0, kVectors = 1, kNonUnitDiag = 0;
// cudaDataType values (library_types.h).
constexpr int kR32F = 0, kR64F = 1;

// The routines of one element type (S for float, D for double).
template <typename U>
struct Routines {
  Status (*potrf_size)(Handle, int, int, U*, int, int*) = nullptr;
  Status (*potrf)(Handle, int, int, U*, int, U*, int, int*) = nullptr;
  Status (*getrf_size)(Handle, int, int, U*, int, int*) = nullptr;
  Status (*getrf)(Handle, int, int, U*, int, U*, int*, int*) = nullptr;
  Status (*getrs)(Handle, int, int, int, const U*, int, const int*, U*, int, int*) = nullptr;
  Status (*geqrf_size)(Handle, int, int, U*, int, int*) = nullptr;
  Status (*geqrf)(Handle, int, int, U*, int, U*, U*, int, int*) = nullptr;
  Status (*orgqr_size)(Handle, int, int, int, const U*, int, const U*, int*) = nullptr;
  Status (*orgqr)(Handle, int, int, int, U*, int, const U*, U*, int, int*) = nullptr;
  Status (*syevd_size)(Handle, int, int, int, const U*, int, const U*, int*) = nullptr;
  Status (*syevd)(Handle, int, int, int, U*, int, U*, U*, int, int*) = nullptr;
  Status (*gesvd_size)(Handle, int, int, int*) = nullptr;
  Status (*gesvd)(Handle, signed char, signed char, int, int, U*, int, U*, U*, int, U*, int, U*, int, U*,
                  int*) = nullptr;
};

struct Loaded {
  Status (*create)(Handle*) = nullptr;
  Status (*set_stream)(Handle, CUstream) = nullptr;
  // The 64-bit generic API (cudaDataType picks the element type).
  Status (*trtri_size)(Handle, int, int, int64_t, int, void*, int64_t, size_t*, size_t*) = nullptr;
  Status (*trtri)(Handle, int, int, int64_t, int, void*, int64_t, void*, size_t, void*, size_t, int*) = nullptr;
  Routines<float> s;
  Routines<double> d;
  bool ok = false;
  std::string reason;
};

Loaded load() {
  Loaded L;
  static const jit::cuda_libraries::LibrarySpec spec{
      "libcusolver", {"libcusolver.so.12", "libcusolver.so.11"}, "cusolver", "ALLOY_CUSOLVER_LIBRARY"};
  void* lib = jit::cuda_libraries::open(spec, nullptr, &L.reason);
  if (!lib) return L;
  std::string missing;
  auto bind = [&](auto& slot, const std::string& name) { jit::cuda_libraries::bind(lib, slot, name, missing); };
  bind(L.create, "cusolverDnCreate");
  bind(L.set_stream, "cusolverDnSetStream");
  bind(L.trtri_size, "cusolverDnXtrtri_bufferSize");
  bind(L.trtri, "cusolverDnXtrtri");
  auto bind_all = [&](auto& r, const std::string& p) {
    const std::string o = p == "S" ? "Sorgqr" : "Dorgqr";
    bind(r.potrf_size, "cusolverDn" + p + "potrf_bufferSize");
    bind(r.potrf, "cusolverDn" + p + "potrf");
    bind(r.getrf_size, "cusolverDn" + p + "getrf_bufferSize");
    bind(r.getrf, "cusolverDn" + p + "getrf");
    bind(r.getrs, "cusolverDn" + p + "getrs");
    bind(r.geqrf_size, "cusolverDn" + p + "geqrf_bufferSize");
    bind(r.geqrf, "cusolverDn" + p + "geqrf");
    bind(r.orgqr_size, "cusolverDn" + o + "_bufferSize");
    bind(r.orgqr, "cusolverDn" + o);
    bind(r.syevd_size, "cusolverDn" + p + "syevd_bufferSize");
    bind(r.syevd, "cusolverDn" + p + "syevd");
    bind(r.gesvd_size, "cusolverDn" + p + "gesvd_bufferSize");
    bind(r.gesvd, "cusolverDn" + p + "gesvd");
  };
  bind_all(L.s, "S");
  bind_all(L.d, "D");
  if (!missing.empty()) L.reason = "libcusolver lacks " + missing;
  L.ok = L.reason.empty();
  return L;
}

const Loaded& loaded() {
  static const Loaded L = load();
  return L;
}

template <typename U>
const Routines<U>& routines() {
  if constexpr (std::is_same_v<U, float>)
    return loaded().s;
  else
    return loaded().d;
}

void check(Status st, const char* call) {
  if (st != 0)
    throw std::runtime_error(std::string("[linalg] ") + call + " failed with cuSOLVER status " + std::to_string(st) +
                             ".");
}

// The process-wide handle, bound to `stream` for as long as the lock is held.
struct Bound {
  std::unique_lock<std::mutex> lock;
  Handle h;
};

Bound bind_stream(CUstream stream) {
  const Loaded& L = loaded();
  if (!L.ok) throw std::runtime_error("[linalg] cuSOLVER is not available: " + L.reason);
  static std::mutex mutex;
  std::unique_lock<std::mutex> lock(mutex);
  static Handle handle = nullptr;
  static unsigned made_in = 0;  // a GPU fault's rebuilt context needs a new handle (the old one is leaked)
  if (!handle || made_in != context_generation()) {
    ensure_context();
    Handle h = nullptr;
    check(L.create(&h), "cusolverDnCreate");
    handle = h;
    made_in = context_generation();
  }
  check(L.set_stream(handle, stream), "cusolverDnSetStream");
  return {std::move(lock), handle};
}

template <typename U>
U* workspace(Scratch& scratch, int lwork) {
  return static_cast<U*>(scratch.workspace(sizeof(U) * static_cast<size_t>(std::max(lwork, 1))));
}

}  // namespace

bool available() { return loaded().ok; }
const std::string& unavailable_reason() { return loaded().reason; }

std::shared_ptr<Data> Scratch::alloc(size_t bytes) {
  auto d = std::make_shared<Data>(allocator(Device(Device::gpu)).malloc(std::max<size_t>(bytes, 1)));
  held.push_back(d);
  return d;
}

void* Scratch::workspace(size_t bytes) {
  if (!work_ || work_->buffer.size < bytes) work_ = alloc(bytes);  // the old one stays held until the sync
  return work_->buffer.ptr;
}

template <typename U>
void potrf(CUstream s, bool upper, int n, U* a, int lda, int* info, Scratch& scratch) {
  auto b = bind_stream(s);
  const auto& r = routines<U>();
  int lwork = 0;
  check(r.potrf_size(b.h, upper ? kUpper : kLower, n, a, lda, &lwork), "potrf_bufferSize");
  check(r.potrf(b.h, upper ? kUpper : kLower, n, a, lda, workspace<U>(scratch, lwork), lwork, info), "potrf");
}

template <typename U>
void getrf(CUstream s, int m, int n, U* a, int lda, int* ipiv, int* info, Scratch& scratch) {
  auto b = bind_stream(s);
  const auto& r = routines<U>();
  int lwork = 0;
  check(r.getrf_size(b.h, m, n, a, lda, &lwork), "getrf_bufferSize");
  check(r.getrf(b.h, m, n, a, lda, workspace<U>(scratch, lwork), ipiv, info), "getrf");
}

template <typename U>
void getrs(CUstream s, int n, int nrhs, const U* a, int lda, const int* ipiv, U* bm, int ldb, int* info) {
  auto b = bind_stream(s);
  check(routines<U>().getrs(b.h, kNoTrans, n, nrhs, a, lda, ipiv, bm, ldb, info), "getrs");
}

template <typename U>
void geqrf(CUstream s, int m, int n, U* a, int lda, U* tau, int* info, Scratch& scratch) {
  auto b = bind_stream(s);
  const auto& r = routines<U>();
  int lwork = 0;
  check(r.geqrf_size(b.h, m, n, a, lda, &lwork), "geqrf_bufferSize");
  check(r.geqrf(b.h, m, n, a, lda, tau, workspace<U>(scratch, lwork), lwork, info), "geqrf");
}

template <typename U>
void orgqr(CUstream s, int m, int n, int k, U* a, int lda, const U* tau, int* info, Scratch& scratch) {
  auto b = bind_stream(s);
  const auto& r = routines<U>();
  int lwork = 0;
  check(r.orgqr_size(b.h, m, n, k, a, lda, tau, &lwork), "orgqr_bufferSize");
  check(r.orgqr(b.h, m, n, k, a, lda, tau, workspace<U>(scratch, lwork), lwork, info), "orgqr");
}

template <typename U>
void syevd(CUstream s, bool vectors, bool upper, int n, U* a, int lda, U* w, int* info, Scratch& scratch) {
  auto b = bind_stream(s);
  const auto& r = routines<U>();
  const int jobz = vectors ? kVectors : kNoVectors, uplo = upper ? kUpper : kLower;
  int lwork = 0;
  check(r.syevd_size(b.h, jobz, uplo, n, a, lda, w, &lwork), "syevd_bufferSize");
  check(r.syevd(b.h, jobz, uplo, n, a, lda, w, workspace<U>(scratch, lwork), lwork, info), "syevd");
}

template <typename U>
void trtri(CUstream s, bool upper, int n, U* a, int lda, int* info, Scratch& scratch) {
  auto b = bind_stream(s);
  const Loaded& L = loaded();
  const int type = std::is_same_v<U, float> ? kR32F : kR64F, uplo = upper ? kUpper : kLower;
  size_t device_bytes = 0, host_bytes = 0;
  check(L.trtri_size(b.h, uplo, kNonUnitDiag, n, type, a, lda, &device_bytes, &host_bytes), "Xtrtri_bufferSize");
  void* dev = scratch.workspace(device_bytes);
  // Host workspace must outlive the asynchronous call: held with the scratch.
  auto host = std::make_shared<std::vector<char>>(std::max<size_t>(host_bytes, 1));
  scratch.host.push_back(host);
  check(L.trtri(b.h, uplo, kNonUnitDiag, n, type, a, lda, dev, device_bytes, host->data(), host_bytes, info), "Xtrtri");
}

template <typename U>
void gesvd(CUstream s, bool vectors, int m, int n, U* a, int lda, U* sv, U* u, int ldu, U* vt, int ldvt, int* info,
           Scratch& scratch) {
  auto b = bind_stream(s);
  const auto& r = routines<U>();
  int lwork = 0;
  check(r.gesvd_size(b.h, m, n, &lwork), "gesvd_bufferSize");
  const signed char job = vectors ? 'A' : 'N';
  // rwork receives the unconverged superdiagonal when info > 0.
  U* rwork = static_cast<U*>(scratch.alloc(sizeof(U) * std::max(std::min(m, n) - 1, 1))->buffer.ptr);
  check(r.gesvd(b.h, job, job, m, n, a, lda, sv, u, ldu, vt, ldvt, workspace<U>(scratch, lwork), lwork, rwork, info),
        "gesvd");
}

#define ALLOY_CUSOLVER_INSTANTIATE(U)                                                   \
  template void potrf<U>(CUstream, bool, int, U*, int, int*, Scratch&);                 \
  template void getrf<U>(CUstream, int, int, U*, int, int*, int*, Scratch&);            \
  template void getrs<U>(CUstream, int, int, const U*, int, const int*, U*, int, int*); \
  template void geqrf<U>(CUstream, int, int, U*, int, U*, int*, Scratch&);              \
  template void orgqr<U>(CUstream, int, int, int, U*, int, const U*, int*, Scratch&);   \
  template void syevd<U>(CUstream, bool, bool, int, U*, int, U*, int*, Scratch&);       \
  template void trtri<U>(CUstream, bool, int, U*, int, int*, Scratch&);                 \
  template void gesvd<U>(CUstream, bool, int, int, U*, int, U*, U*, int, U*, int, int*, Scratch&);
ALLOY_CUSOLVER_INSTANTIATE(float)
ALLOY_CUSOLVER_INSTANTIATE(double)
#undef ALLOY_CUSOLVER_INSTANTIATE

}  // namespace alloy::cuda::cusolver
