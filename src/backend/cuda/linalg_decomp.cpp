// GPU evals of the factorization primitives. float32/float64 Cholesky, LU,
// inverse (getrf + getrs against I; trtri when triangular), QR, Eigh and SVD run on
// cuSOLVER (dlopen'ed, backend/cuda/cusolver.h), one matrix per call in
// column-major scratch, then the stream is synchronized (to read LAPACK's
// info and to release the scratch safely).
// Everything else (complex inputs, Eig, empty matrices,
// or no libcusolver) runs the CPU's LAPACK code on a host copy and uploads
// the results: correct but synchronous and slow for big batches.
#include "primitives/linalg_decomp.h"

#include <algorithm>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>

#include "alloy/allocator.h"
#include "backend/cuda/cusolver.h"
#include "backend/cuda/device.h"
#include "backend/cuda/elementwise.h"
#include "backend/cuda/kernels.h"
#include "core/streams.h"

namespace alloy {

using cuda::CUstream;
using cuda::cusolver::Scratch;

namespace {

void run_on_host(Primitive& p, const std::vector<array>& inputs, std::vector<array>& outputs) {
  // inputs_on_host waits for the GPU work that produced the inputs.
  p.eval_cpu(inputs_on_host(inputs), outputs);
  for (array& out : outputs) {
    std::shared_ptr<Data> host = out.data_shared_ptr();  // kept alive across the upload
    const void* src = out.raw_data();
    const size_t bytes = out.nbytes();
    cuda::allocate_row_contiguous(out);
    cuda::upload(out.raw_data(), src, bytes, p.stream(), p.name());
  }
}

bool on_cusolver(const array& in) {
  return (in.dtype() == float32 || in.dtype() == float64) && in.size() > 0 && cuda::cusolver::available();
}

// Calls f(U{}) with float or double for the (already checked) dtype.
template <typename F>
void dispatch_real(Dtype d, F&& f) {
  if (d == float32)
    f(float{});
  else
    f(double{});
}

Shape batch_of(const array& a) { return Shape(a.shape().begin(), a.shape().end() - 2); }

// Element strides of stacked matrices: `mat` elements apart, entry (r, c) at r * rs + c * cs.
Strides stacked(const Shape& batch, int64_t mat, int64_t rs, int64_t cs) {
  Strides st(batch.size() + 2);
  int64_t acc = mat;
  for (int d = static_cast<int>(batch.size()) - 1; d >= 0; --d) {
    st[d] = acc;
    acc *= batch[d];
  }
  st[batch.size()] = rs;
  st[batch.size() + 1] = cs;
  return st;
}

// The matrices of `in` copied into scratch: column-major (ld = rows) or row-major.
struct GpuBatch {
  std::shared_ptr<Data> data;
  int rows = 0, cols = 0;
  size_t count = 1;
  template <typename U>
  U* matrix(size_t i) const {
    return static_cast<U*>(data->buffer.ptr) + i * static_cast<size_t>(rows) * cols;
  }
};

GpuBatch load(const array& in, bool col_major, CUstream s, Scratch& scratch) {
  GpuBatch b;
  b.rows = static_cast<int>(in.shape(-2));
  b.cols = static_cast<int>(in.shape(-1));
  for (auto d : batch_of(in)) b.count *= d;
  b.data = scratch.alloc(in.nbytes());
  Strides dst = stacked(batch_of(in), int64_t{b.rows} * b.cols, col_major ? 1 : b.cols, col_major ? b.rows : 1);
  cuda::copy_into(in, b.data->buffer.ptr, in.dtype(), dst, s, "linalg");
  return b;
}

// out (allocated here, row-major) from matrices in `data` laid out as `stacked(mat, rs, cs)`.
void store(const std::shared_ptr<Data>& data, int64_t mat, int64_t rs, int64_t cs, array& out, CUstream s) {
  cuda::allocate_row_contiguous(out);
  if (out.size() == 0) return;
  array view(data, out.shape(), stacked(batch_of(out), mat, rs, cs), out.dtype());
  cuda::copy_into(view, out.raw_data(), out.dtype(), out.strides(), s, "linalg");
}

// out (allocated here) from a dense buffer of the same layout.
void store_dense(const std::shared_ptr<Data>& data, array& out, CUstream s) {
  cuda::allocate_row_contiguous(out);
  if (out.nbytes() == 0) return;
  cuda::check(
      cuda_driver::api().cuMemcpyDtoDAsync(cuda::dptr(out.raw_data()), cuda::dptr(data->buffer.ptr), out.nbytes(), s),
      "linalg", "cuMemcpyDtoDAsync");
}

// Waits for the stream (the scratch may be released after) and returns the infos.
std::vector<int> finish(const Stream& stream, const std::shared_ptr<Data>& infos, size_t count) {
  cuda::note_pending(stream);
  cuda::synchronize(stream);
  std::vector<int> host(count);
  if (count) {
    cuda::check(cuda_driver::api().cuMemcpyDtoH(host.data(), cuda::dptr(infos->buffer.ptr), count * sizeof(int)),
                "linalg", "cuMemcpyDtoH");
  }
  return host;
}

int* info_at(const std::shared_ptr<Data>& infos, size_t i) { return static_cast<int*>(infos->buffer.ptr) + i; }

}  // namespace

void Cholesky::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  if (!on_cusolver(inputs[0])) return run_on_host(*this, inputs, outputs);
  CUstream s = cuda::stream_for(stream());
  Scratch scratch;
  GpuBatch b = load(inputs[0], true, s, scratch);
  auto infos = scratch.alloc(b.count * sizeof(int));
  const int n = b.rows;
  dispatch_real(inputs[0].dtype(), [&](auto tag) {
    using U = decltype(tag);
    for (size_t i = 0; i < b.count; ++i)
      cuda::cusolver::potrf<U>(s, upper_, n, b.matrix<U>(i), n, info_at(infos, i), scratch);
  });
  // The unread triangle still holds the input: the op keeps only the factor's triangle.
  store(b.data, int64_t{n} * n, 1, n, outputs[0], s);
  finish(stream(), infos, b.count);  // info > 0 (not positive definite) is not an error, as on the CPU
}

void Inverse::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  if (!on_cusolver(inputs[0])) return run_on_host(*this, inputs, outputs);
  CUstream s = cuda::stream_for(stream());
  Scratch scratch;
  GpuBatch b = load(inputs[0], true, s, scratch);
  const int n = b.rows;
  if (triangular_) {
    auto infos = scratch.alloc(b.count * sizeof(int));
    dispatch_real(inputs[0].dtype(), [&](auto tag) {
      using U = decltype(tag);
      for (size_t i = 0; i < b.count; ++i)
        cuda::cusolver::trtri<U>(s, upper_, n, b.matrix<U>(i), n, info_at(infos, i), scratch);
    });
    // The unread triangle keeps the input: the op keeps only the inverse's triangle.
    store(b.data, int64_t{n} * n, 1, n, outputs[0], s);
    for (int info : finish(stream(), infos, b.count)) {
      if (info > 0) {
        throw std::runtime_error("[linalg::tri_inv] The matrix is singular (pivot " + std::to_string(info - 1) +
                                 " is exactly zero); it has no inverse.");
      }
    }
    return;
  }
  const size_t mat = static_cast<size_t>(n) * n;
  auto infos = scratch.alloc(b.count * sizeof(int));
  auto solve_infos = scratch.alloc(b.count * sizeof(int));
  auto ipiv = scratch.alloc(b.count * n * sizeof(int));
  auto rhs = scratch.alloc(b.count * mat * size_of(inputs[0].dtype()));
  dispatch_real(inputs[0].dtype(), [&](auto tag) {
    using U = decltype(tag);
    // Identity right-hand sides, from the host.
    std::vector<U> eye(b.count * mat, U(0));
    for (size_t i = 0; i < b.count; ++i)
      for (int d = 0; d < n; ++d) eye[i * mat + d * (n + 1)] = U(1);
    cuda::upload(rhs->buffer.ptr, eye.data(), eye.size() * sizeof(U), stream(), "linalg::inv");
    U* x = static_cast<U*>(rhs->buffer.ptr);
    int* piv = static_cast<int*>(ipiv->buffer.ptr);
    for (size_t i = 0; i < b.count; ++i) {
      cuda::cusolver::getrf<U>(s, n, n, b.matrix<U>(i), n, piv + i * n, info_at(infos, i), scratch);
      cuda::cusolver::getrs<U>(s, n, n, b.matrix<U>(i), n, piv + i * n, x + i * mat, n, info_at(solve_infos, i));
    }
  });
  store(rhs, static_cast<int64_t>(mat), 1, n, outputs[0], s);
  for (int info : finish(stream(), infos, b.count)) {
    if (info > 0) {
      throw std::runtime_error("[linalg::inv] The matrix is singular (pivot " + std::to_string(info - 1) +
                               " is exactly zero); it has no inverse.");
    }
  }
}

void LUF::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  if (!on_cusolver(inputs[0])) return run_on_host(*this, inputs, outputs);
  CUstream s = cuda::stream_for(stream());
  Scratch scratch;
  GpuBatch b = load(inputs[0], true, s, scratch);
  const int m = b.rows, n = b.cols, k = std::min(m, n);
  auto infos = scratch.alloc(b.count * sizeof(int));
  auto ipiv = scratch.alloc(b.count * k * sizeof(int));
  dispatch_real(inputs[0].dtype(), [&](auto tag) {
    using U = decltype(tag);
    int* piv = static_cast<int*>(ipiv->buffer.ptr);
    for (size_t i = 0; i < b.count; ++i)
      cuda::cusolver::getrf<U>(s, m, n, b.matrix<U>(i), m, piv + i * k, info_at(infos, i), scratch);
  });
  store(b.data, int64_t{m} * n, 1, m, outputs[0], s);
  finish(stream(), infos, b.count);  // an exact zero pivot still factors
  // Pivots (1-based row swaps) become uint32 pivots and the permutation on the host: O(batch * m).
  std::vector<int> piv(b.count * k);
  if (!piv.empty()) {
    cuda::check(cuda_driver::api().cuMemcpyDtoH(piv.data(), cuda::dptr(ipiv->buffer.ptr), piv.size() * sizeof(int)),
                "linalg::lu_factor", "cuMemcpyDtoH");
  }
  std::vector<uint32_t> pivots(b.count * k), perm_inv(b.count * m), perm(m);
  for (size_t i = 0; i < b.count; ++i) {
    std::iota(perm.begin(), perm.end(), 0u);
    for (int j = 0; j < k; ++j) {
      pivots[i * k + j] = static_cast<uint32_t>(piv[i * k + j] - 1);
      std::swap(perm[j], perm[piv[i * k + j] - 1]);
    }
    for (int r = 0; r < m; ++r) perm_inv[i * m + perm[r]] = static_cast<uint32_t>(r);
  }
  for (auto [out, host] : {std::pair{&outputs[1], &pivots}, std::pair{&outputs[2], &perm_inv}}) {
    cuda::allocate_row_contiguous(*out);
    cuda::upload(out->raw_data(), host->data(), out->nbytes(), stream(), "linalg::lu_factor");
  }
}

void QRF::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  if (!on_cusolver(inputs[0])) return run_on_host(*this, inputs, outputs);
  CUstream s = cuda::stream_for(stream());
  Scratch scratch;
  GpuBatch b = load(inputs[0], true, s, scratch);
  const int m = b.rows, n = b.cols, k = std::min(m, n);
  auto infos = scratch.alloc(b.count * sizeof(int));
  auto tau = scratch.alloc(b.count * k * size_of(inputs[0].dtype()));
  dispatch_real(inputs[0].dtype(), [&](auto tag) {
    using U = decltype(tag);
    U* t = static_cast<U*>(tau->buffer.ptr);
    for (size_t i = 0; i < b.count; ++i)
      cuda::cusolver::geqrf<U>(s, m, n, b.matrix<U>(i), m, t + i * k, info_at(infos, i), scratch);
    // R: the first k rows (the op keeps their upper triangle), copied before orgqr overwrites them.
    store(b.data, int64_t{m} * n, 1, m, outputs[1], s);
    for (size_t i = 0; i < b.count; ++i)
      cuda::cusolver::orgqr<U>(s, m, k, k, b.matrix<U>(i), m, t + i * k, info_at(infos, i), scratch);
  });
  store(b.data, int64_t{m} * n, 1, m, outputs[0], s);
  finish(stream(), infos, b.count);
}

void SVD::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  if (!on_cusolver(inputs[0])) return run_on_host(*this, inputs, outputs);
  CUstream s = cuda::stream_for(stream());
  Scratch scratch;
  const int m = static_cast<int>(inputs[0].shape(-2)), n = static_cast<int>(inputs[0].shape(-1));
  // cuSOLVER's gesvd needs rows >= cols. A row-major copy of a is a^T in
  // column-major, so wide inputs factor a^T = Ub S VbT and read a = VbT^T S Ub^T.
  const bool tall = m >= n;
  GpuBatch b = load(inputs[0], tall, s, scratch);
  const int rm = tall ? m : n, rn = tall ? n : m, k = rn;
  const size_t isz = size_of(inputs[0].dtype());
  auto infos = scratch.alloc(b.count * sizeof(int));
  auto sv = scratch.alloc(b.count * k * isz);
  auto u = compute_uv_ ? scratch.alloc(b.count * static_cast<size_t>(rm) * rm * isz) : nullptr;
  auto vt = compute_uv_ ? scratch.alloc(b.count * static_cast<size_t>(rn) * rn * isz) : nullptr;
  dispatch_real(inputs[0].dtype(), [&](auto tag) {
    using U = decltype(tag);
    for (size_t i = 0; i < b.count; ++i) {
      U* ui = compute_uv_ ? static_cast<U*>(u->buffer.ptr) + i * static_cast<size_t>(rm) * rm : nullptr;
      U* vi = compute_uv_ ? static_cast<U*>(vt->buffer.ptr) + i * static_cast<size_t>(rn) * rn : nullptr;
      cuda::cusolver::gesvd<U>(s, compute_uv_, rm, rn, b.matrix<U>(i), rm, static_cast<U*>(sv->buffer.ptr) + i * k, ui,
                               rm, vi, rn, info_at(infos, i), scratch);
    }
  });
  if (compute_uv_) {
    if (tall) {  // column-major U (m x m) and V^T (n x n)
      store(u, int64_t{m} * m, 1, m, outputs[0], s);
      store(vt, int64_t{n} * n, 1, n, outputs[2], s);
    } else {  // U = VbT^T and Vt = Ub^T: the column-major buffers read row-major
      store(vt, int64_t{m} * m, m, 1, outputs[0], s);
      store(u, int64_t{n} * n, n, 1, outputs[2], s);
    }
    store_dense(sv, outputs[1], s);
  } else {
    store_dense(sv, outputs[0], s);
  }
  for (int info : finish(stream(), infos, b.count)) {
    if (info > 0) throw std::runtime_error("[linalg::svd] The SVD did not converge.");
  }
}

void Eigh::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  if (!on_cusolver(inputs[0])) return run_on_host(*this, inputs, outputs);
  CUstream s = cuda::stream_for(stream());
  Scratch scratch;
  GpuBatch b = load(inputs[0], true, s, scratch);
  const int n = b.rows;
  auto infos = scratch.alloc(b.count * sizeof(int));
  auto w = scratch.alloc(b.count * n * size_of(inputs[0].dtype()));
  dispatch_real(inputs[0].dtype(), [&](auto tag) {
    using U = decltype(tag);
    for (size_t i = 0; i < b.count; ++i) {
      cuda::cusolver::syevd<U>(s, compute_vectors_, uplo_ == 'U', n, b.matrix<U>(i), n,
                               static_cast<U*>(w->buffer.ptr) + i * n, info_at(infos, i), scratch);
    }
  });
  store_dense(w, outputs[0], s);
  if (compute_vectors_) store(b.data, int64_t{n} * n, 1, n, outputs[1], s);
  for (int info : finish(stream(), infos, b.count)) {
    if (info > 0) throw std::runtime_error("[linalg::eigh] The eigenvalue iteration did not converge.");
  }
}

// No cuSOLVER path yet: geev needs the 64-bit generic API (CUDA >= 12.6).
void Eig::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  run_on_host(*this, inputs, outputs);
}

}  // namespace alloy
