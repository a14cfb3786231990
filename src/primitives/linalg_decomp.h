// Matrix factorizations over the last two axes, batched over the rest.
// Inputs arrive as float32/float64 (complex64 where noted); the ops check
// dtypes and shapes. The CPU runs LAPACK (backend/cpu/lapack.cpp); the GPU
// runs cuSOLVER where it can and LAPACK on a host copy otherwise
// (backend/cuda/linalg_decomp.cpp).
// None has a vjp, as in MLX 0.32.4 (its mx.grad refuses all of them); det
// and slogdet of small matrices are differentiable composites (ops).
#pragma once

#include <tuple>

#include "alloy/primitive.h"

namespace alloy {

// Shared boilerplate: eval_cpu/eval_gpu and an equality on the parameters.
#define ALLOY_LINALG_PRIMITIVE_BODY(Class, label)                                        \
  const char* name() const override { return label; }                                    \
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override; \
  void eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;

// out = L (lower) or U (upper) with a = L L^T = U^T U; the other triangle is
// unspecified (the op keeps only the factor's triangle).
class Cholesky : public Primitive {
 public:
  // The fields that rebuild it (export_function).
  auto state() const { return std::tie(upper_); }
  Cholesky(Stream s, bool upper) : Primitive(s), upper_(upper) {}
  ALLOY_LINALG_PRIMITIVE_BODY(Cholesky, "Cholesky")
  bool is_equivalent(const Primitive& o) const override {
    auto* p = dynamic_cast<const Cholesky*>(&o);
    return p && p->upper_ == upper_;
  }
  bool upper() const { return upper_; }

 private:
  bool upper_;
};

// General inverse (getrf + getri), or of a triangular matrix (trtri) reading
// only the `upper` or lower triangle; then the other triangle of the result
// is unspecified (the op keeps the inverse's triangle).
class Inverse : public Primitive {
 public:
  // The fields that rebuild it (export_function).
  auto state() const { return std::tie(triangular_, upper_); }
  Inverse(Stream s, bool triangular, bool upper) : Primitive(s), triangular_(triangular), upper_(upper) {}
  ALLOY_LINALG_PRIMITIVE_BODY(Inverse, "Inverse")
  bool is_equivalent(const Primitive& o) const override {
    auto* p = dynamic_cast<const Inverse*>(&o);
    return p && p->triangular_ == triangular_ && p->upper_ == upper_;
  }
  bool triangular() const { return triangular_; }
  bool upper() const { return upper_; }

 private:
  bool triangular_, upper_;
};

// outputs: LU (m, n) packed as getrf, pivots uint32 (min(m, n)), and the row
// permutation uint32 (m) those swaps make (perm[i]: the row of `a` that
// lands at row i of L @ U).
class LUF : public Primitive {
 public:
  // The fields that rebuild it (export_function).
  std::tuple<> state() const { return {}; }
  explicit LUF(Stream s) : Primitive(s) {}
  ALLOY_LINALG_PRIMITIVE_BODY(LUF, "LUF")
  bool is_equivalent(const Primitive& o) const override { return dynamic_cast<const LUF*>(&o) != nullptr; }
};

// outputs: Q (m, k) and R (k, n), k = min(m, n) (geqrf + orgqr); R's strict
// lower part is unspecified (the op takes its upper triangle).
class QRF : public Primitive {
 public:
  // The fields that rebuild it (export_function).
  std::tuple<> state() const { return {}; }
  explicit QRF(Stream s) : Primitive(s) {}
  ALLOY_LINALG_PRIMITIVE_BODY(QRF, "QRF")
  bool is_equivalent(const Primitive& o) const override { return dynamic_cast<const QRF*>(&o) != nullptr; }
};

// outputs: U (m, m), S (k) real, Vt (n, n) with compute_uv; S alone otherwise.
class SVD : public Primitive {
 public:
  // The fields that rebuild it (export_function).
  auto state() const { return std::tie(compute_uv_); }
  SVD(Stream s, bool compute_uv) : Primitive(s), compute_uv_(compute_uv) {}
  ALLOY_LINALG_PRIMITIVE_BODY(SVD, "SVD")
  bool is_equivalent(const Primitive& o) const override {
    auto* p = dynamic_cast<const SVD*>(&o);
    return p && p->compute_uv_ == compute_uv_;
  }

 private:
  bool compute_uv_;
};

// General eigenproblem (geev on complex copies): outputs complex64 values and,
// with compute_vectors, right eigenvectors as columns.
class Eig : public Primitive {
 public:
  // The fields that rebuild it (export_function).
  auto state() const { return std::tie(compute_vectors_); }
  Eig(Stream s, bool compute_vectors) : Primitive(s), compute_vectors_(compute_vectors) {}
  ALLOY_LINALG_PRIMITIVE_BODY(Eig, "Eig")
  bool is_equivalent(const Primitive& o) const override {
    auto* p = dynamic_cast<const Eig*>(&o);
    return p && p->compute_vectors_ == compute_vectors_;
  }

 private:
  bool compute_vectors_;
};

// Symmetric/Hermitian eigenproblem (syevd/heevd) reading the `uplo` triangle:
// real ascending values and, with compute_vectors, vectors as columns.
class Eigh : public Primitive {
 public:
  // The fields that rebuild it (export_function).
  auto state() const { return std::tie(uplo_, compute_vectors_); }
  Eigh(Stream s, char uplo, bool compute_vectors) : Primitive(s), uplo_(uplo), compute_vectors_(compute_vectors) {}
  ALLOY_LINALG_PRIMITIVE_BODY(Eigh, "Eigh")
  bool is_equivalent(const Primitive& o) const override {
    auto* p = dynamic_cast<const Eigh*>(&o);
    return p && p->uplo_ == uplo_ && p->compute_vectors_ == compute_vectors_;
  }

 private:
  char uplo_;
  bool compute_vectors_;
};

#undef ALLOY_LINALG_PRIMITIVE_BODY

}  // namespace alloy
