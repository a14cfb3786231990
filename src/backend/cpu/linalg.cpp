// CPU matmul: BLAS for float32/float64/complex64, float32 BLAS for the
// 16-bit floats, a plain loop for integers and bool.
#include <cblas.h>

#include <complex>
#include <type_traits>
#include <vector>

#include "backend/common/blas_layout.h"
#include "backend/cpu/strided.h"
#include "core/cast.h"
#include "primitives/linalg.h"

namespace alloy {
namespace {

int64_t batch_loc(size_t b, const Shape& batch, const Strides& strides) {
  int64_t loc = 0;
  for (int d = static_cast<int>(batch.size()) - 1; d >= 0 && b > 0; --d) {
    loc += static_cast<int64_t>(b % batch[d]) * strides[d];
    b /= batch[d];
  }
  return loc;
}

// A row-contiguous copy of `in`, converted to U.
template <typename U>
std::vector<U> row_major_copy(const array& in) {
  std::vector<U> out(in.size());
  if (in.size() == 0) return out;
  auto layout = cpu::collapse_dims(in.shape(), {in.strides(), row_major_strides(in.shape())});
  dispatch_dtype(in.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = in.data<T>();
    cpu::for_each_offset<2>(layout, [&](const int64_t* off) { out[off[1]] = cast_value<U>(src[off[0]]); });
  });
  return out;
}

struct Operand {
  const void* base;
  Strides batch_strides;
  int64_t ld;
  bool trans;
};

// Operand description for BLAS; `storage` receives a row-major copy when
// the memory layout cannot be passed as is.
template <typename U>
Operand blas_operand(const array& in, std::vector<U>& storage, bool must_copy) {
  Operand op;
  const int nd = in.ndim();
  if (!must_copy && blas_layout(in, op.ld, op.trans)) {
    op.base = in.raw_data();
    op.batch_strides.assign(in.strides().begin(), in.strides().end() - 2);
    return op;
  }
  storage = row_major_copy<U>(in);
  op.base = storage.data();
  Strides row = row_major_strides(in.shape());
  op.batch_strides.assign(row.begin(), row.end() - 2);
  op.ld = std::max<int64_t>(in.shape(nd - 1), 1);
  op.trans = false;
  return op;
}

template <typename U>
void gemm(bool ta, bool tb, int M, int N, int K, const U* A, int lda, const U* B, int ldb, U* C) {
  auto t = [](bool x) { return x ? CblasTrans : CblasNoTrans; };
  if constexpr (std::is_same_v<U, float>) {
    cblas_sgemm(CblasRowMajor, t(ta), t(tb), M, N, K, 1.0f, A, lda, B, ldb, 0.0f, C, N);
  } else if constexpr (std::is_same_v<U, double>) {
    cblas_dgemm(CblasRowMajor, t(ta), t(tb), M, N, K, 1.0, A, lda, B, ldb, 0.0, C, N);
  } else {
    const U one(1.0f, 0.0f), zero(0.0f, 0.0f);
    cblas_cgemm(CblasRowMajor, t(ta), t(tb), M, N, K, &one, A, lda, B, ldb, &zero, C, N);
  }
}

// C[b] = A[b] B[b] through BLAS in type U (float, double or complex64);
// `out_u` is row-major (batch, M, N).
template <typename U>
void blas_matmul(const array& a, const array& b, U* out_u, const Shape& batch, bool upcast) {
  const int nd = a.ndim();
  const int M = a.shape(nd - 2), K = a.shape(nd - 1), N = b.shape(nd - 1);
  std::vector<U> sa, sb;
  Operand A = blas_operand<U>(a, sa, upcast);
  Operand B = blas_operand<U>(b, sb, upcast);
  const size_t n_batch = shape_size(batch);
  for (size_t i = 0; i < n_batch; ++i) {
    const U* pa = static_cast<const U*>(A.base) + batch_loc(i, batch, A.batch_strides);
    const U* pb = static_cast<const U*>(B.base) + batch_loc(i, batch, B.batch_strides);
    gemm<U>(A.trans, B.trans, M, N, K, pa, static_cast<int>(A.ld), pb, static_cast<int>(B.ld),
            out_u + i * static_cast<size_t>(M) * N);
  }
}

// Integers and bool: products accumulated in the element type (wrapping as numpy).
template <typename T>
void loop_matmul(const array& a, const array& b, T* out, const Shape& batch) {
  const int nd = a.ndim();
  const int64_t M = a.shape(nd - 2), K = a.shape(nd - 1), N = b.shape(nd - 1);
  const int64_t ar = a.strides()[nd - 2], ac = a.strides()[nd - 1];
  const int64_t br = b.strides()[nd - 2], bc = b.strides()[nd - 1];
  Strides abs(a.strides().begin(), a.strides().end() - 2), bbs(b.strides().begin(), b.strides().end() - 2);
  const T* A = a.data<T>();
  const T* B = b.data<T>();
  std::vector<T> row(N);
  for (size_t i = 0, n = shape_size(batch); i < n; ++i) {
    const T* pa = A + batch_loc(i, batch, abs);
    const T* pb = B + batch_loc(i, batch, bbs);
    T* pc = out + i * M * N;
    for (int64_t r = 0; r < M; ++r) {
      std::fill(row.begin(), row.end(), T(0));
      for (int64_t k = 0; k < K; ++k) {
        const T x = pa[r * ar + k * ac];
        for (int64_t c = 0; c < N; ++c) row[c] = cast_value<T>(row[c] + x * pb[k * br + c * bc]);
      }
      std::copy(row.begin(), row.end(), pc + r * N);
    }
  }
}

}  // namespace

void Matmul::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& a = inputs[0];
  const array& b = inputs[1];
  array& out = outputs[0];
  cpu::allocate_row_contiguous(out);
  if (out.size() == 0) return;
  Shape batch(out.shape().begin(), out.shape().end() - 2);
  dispatch_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, complex64_t>) {
      if (a.shape().back() == 0) {  // K == 0: a sum of nothing
        std::fill(out.data<T>(), out.data<T>() + out.size(), T(0));
        return;
      }
      blas_matmul<T>(a, b, out.data<T>(), batch, false);
    } else if constexpr (std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>) {
      std::vector<float> acc(out.size(), 0.0f);
      if (a.shape().back() != 0) blas_matmul<float>(a, b, acc.data(), batch, true);
      T* dst = out.data<T>();
      for (size_t i = 0; i < acc.size(); ++i) dst[i] = cast_value<T>(acc[i]);
    } else {
      loop_matmul<T>(a, b, out.data<T>(), batch);
    }
  });
}

}  // namespace alloy
