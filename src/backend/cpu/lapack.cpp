// The LAPACK bindings of lapack.h. Character arguments carry gfortran's
// hidden length arguments (size_t, trailing); routines that OpenBLAS writes
// in C ignore them.
#include "backend/cpu/lapack.h"

#include <algorithm>

#include "backend/cpu/strided.h"
#include "core/cast.h"

using cfloat = std::complex<float>;
using cdouble = std::complex<double>;
using flen = size_t;

extern "C" {
#define ALLOY_LAPACK_REAL_DECLS(p, T)                                                     \
  void p##potrf_(const char*, const int*, T*, const int*, int*, flen);                    \
  void p##getrf_(const int*, const int*, T*, const int*, int*, int*);                     \
  void p##getri_(const int*, T*, const int*, const int*, T*, const int*, int*);           \
  void p##trtri_(const char*, const char*, const int*, T*, const int*, int*, flen, flen); \
  void p##geqrf_(const int*, const int*, T*, const int*, T*, T*, const int*, int*);
ALLOY_LAPACK_REAL_DECLS(s, float)
ALLOY_LAPACK_REAL_DECLS(d, double)
ALLOY_LAPACK_REAL_DECLS(c, cfloat)
ALLOY_LAPACK_REAL_DECLS(z, cdouble)
#undef ALLOY_LAPACK_REAL_DECLS
void sorgqr_(const int*, const int*, const int*, float*, const int*, const float*, float*, const int*, int*);
void dorgqr_(const int*, const int*, const int*, double*, const int*, const double*, double*, const int*, int*);
void sgesdd_(const char*, const int*, const int*, float*, const int*, float*, float*, const int*, float*, const int*,
             float*, const int*, int*, int*, flen);
void dgesdd_(const char*, const int*, const int*, double*, const int*, double*, double*, const int*, double*,
             const int*, double*, const int*, int*, int*, flen);
void cgesdd_(const char*, const int*, const int*, cfloat*, const int*, float*, cfloat*, const int*, cfloat*, const int*,
             cfloat*, const int*, float*, int*, int*, flen);
void zgesdd_(const char*, const int*, const int*, cdouble*, const int*, double*, cdouble*, const int*, cdouble*,
             const int*, cdouble*, const int*, double*, int*, int*, flen);
void sgeev_(const char*, const char*, const int*, float*, const int*, float*, float*, float*, const int*, float*,
            const int*, float*, const int*, int*, flen, flen);
void dgeev_(const char*, const char*, const int*, double*, const int*, double*, double*, double*, const int*, double*,
            const int*, double*, const int*, int*, flen, flen);
void cgeev_(const char*, const char*, const int*, cfloat*, const int*, cfloat*, cfloat*, const int*, cfloat*,
            const int*, cfloat*, const int*, float*, int*, flen, flen);
void zgeev_(const char*, const char*, const int*, cdouble*, const int*, cdouble*, cdouble*, const int*, cdouble*,
            const int*, cdouble*, const int*, double*, int*, flen, flen);
void ssyevd_(const char*, const char*, const int*, float*, const int*, float*, float*, const int*, int*, const int*,
             int*, flen, flen);
void dsyevd_(const char*, const char*, const int*, double*, const int*, double*, double*, const int*, int*, const int*,
             int*, flen, flen);
void cheevd_(const char*, const char*, const int*, cfloat*, const int*, float*, cfloat*, const int*, float*, const int*,
             int*, const int*, int*, flen, flen);
}

namespace alloy::lapack {

namespace {

// Workspace sizes come back from a query call (lwork = -1) in work[0].
template <typename U>
int work_size(const U& w) {
  return std::max(1, static_cast<int>(std::real(w)));
}

// LAPACK's two calls to a routine with one workspace: a query (lwork = -1,
// the size comes back in work[0]), then the call with that much workspace.
// `call(work, lwork)` makes the call and sets `info`.
template <typename U, typename Call>
int with_workspace(const int& info, Call&& call) {
  U size{};
  const int query = -1;
  call(&size, &query);
  if (info != 0) return info;
  int lwork = work_size(size);
  std::vector<U> work(lwork);
  call(work.data(), &lwork);
  return info;
}

}  // namespace

void check_info(int info, const char* op, const char* routine) {
  if (info < 0) {
    throw std::runtime_error(std::string("[") + op + "] " + routine + " rejected argument " + std::to_string(-info) +
                             " (LAPACK says so of a matrix holding NaN or infinity).");
  }
}

template <typename U>
int potrf(char uplo, int n, U* a, int lda) {
  int info = 0;
  if constexpr (std::is_same_v<U, float>)
    spotrf_(&uplo, &n, a, &lda, &info, 1);
  else if constexpr (std::is_same_v<U, double>)
    dpotrf_(&uplo, &n, a, &lda, &info, 1);
  else
    static_assert(sizeof(U) == 0, "potrf: real types only");
  return info;
}

template <typename U>
int getrf(int m, int n, U* a, int lda, int* ipiv) {
  int info = 0;
  if constexpr (std::is_same_v<U, float>)
    sgetrf_(&m, &n, a, &lda, ipiv, &info);
  else if constexpr (std::is_same_v<U, double>)
    dgetrf_(&m, &n, a, &lda, ipiv, &info);
  else
    static_assert(sizeof(U) == 0, "getrf: real types only");
  return info;
}

template <typename U>
int getri(int n, U* a, int lda, const int* ipiv) {
  int info = 0;
  auto call = [&](U* work, const int* lwork) {
    if constexpr (std::is_same_v<U, float>)
      sgetri_(&n, a, &lda, ipiv, work, lwork, &info);
    else if constexpr (std::is_same_v<U, double>)
      dgetri_(&n, a, &lda, ipiv, work, lwork, &info);
    else
      static_assert(sizeof(U) == 0, "getri: real types only");
  };
  return with_workspace<U>(info, call);
}

template <typename U>
int trtri(char uplo, int n, U* a, int lda) {
  int info = 0;
  const char diag = 'N';
  if constexpr (std::is_same_v<U, float>)
    strtri_(&uplo, &diag, &n, a, &lda, &info, 1, 1);
  else if constexpr (std::is_same_v<U, double>)
    dtrtri_(&uplo, &diag, &n, a, &lda, &info, 1, 1);
  else
    static_assert(sizeof(U) == 0, "trtri: real types only");
  return info;
}

template <typename U>
int geqrf(int m, int n, U* a, int lda, U* tau) {
  int info = 0;
  auto call = [&](U* work, const int* lwork) {
    if constexpr (std::is_same_v<U, float>)
      sgeqrf_(&m, &n, a, &lda, tau, work, lwork, &info);
    else if constexpr (std::is_same_v<U, double>)
      dgeqrf_(&m, &n, a, &lda, tau, work, lwork, &info);
    else
      static_assert(sizeof(U) == 0, "geqrf: real types only");
  };
  return with_workspace<U>(info, call);
}

template <typename U>
int orgqr(int m, int n, int k, U* a, int lda, const U* tau) {
  int info = 0;
  auto call = [&](U* work, const int* lwork) {
    if constexpr (std::is_same_v<U, float>)
      sorgqr_(&m, &n, &k, a, &lda, tau, work, lwork, &info);
    else if constexpr (std::is_same_v<U, double>)
      dorgqr_(&m, &n, &k, a, &lda, tau, work, lwork, &info);
    else
      static_assert(sizeof(U) == 0, "orgqr: real types only");
  };
  return with_workspace<U>(info, call);
}

template <typename U>
int gesdd(char jobz, int m, int n, U* a, int lda, real_t<U>* s, U* u, int ldu, U* vt, int ldvt) {
  int info = 0;
  const int mn = std::min(m, n), mx = std::max(m, n);
  std::vector<int> iwork(8 * static_cast<size_t>(std::max(mn, 1)));
  // Complex routines also take real workspace; these are LAPACK's documented minima.
  std::vector<real_t<U>> rwork;
  if constexpr (is_complex_v<U>) {
    const size_t lr = jobz == 'N' ? 7 * static_cast<size_t>(mn)
                                  : std::max(5 * static_cast<size_t>(mn) * mn + 5 * mn,
                                             2 * static_cast<size_t>(mx) * mn + 2 * static_cast<size_t>(mn) * mn + mn);
    rwork.resize(std::max<size_t>(lr, 1));
  }
  auto call = [&](U* work, const int* lwork) {
    if constexpr (std::is_same_v<U, float>)
      sgesdd_(&jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work, lwork, iwork.data(), &info, 1);
    else if constexpr (std::is_same_v<U, double>)
      dgesdd_(&jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work, lwork, iwork.data(), &info, 1);
    else if constexpr (std::is_same_v<U, cfloat>)
      cgesdd_(&jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work, lwork, rwork.data(), iwork.data(), &info, 1);
    else
      zgesdd_(&jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work, lwork, rwork.data(), iwork.data(), &info, 1);
  };
  return with_workspace<U>(info, call);
}

template <typename U>
int geev(char jobvr, int n, U* a, int lda, U* w, U* vr, int ldvr) {
  static_assert(is_complex_v<U>, "geev: complex types only (real inputs are widened first)");
  int info = 0, ldvl = 1;
  const char jobvl = 'N';
  std::vector<real_t<U>> rwork(2 * static_cast<size_t>(std::max(n, 1)));
  U* vl = nullptr;
  auto call = [&](U* work, const int* lwork) {
    if constexpr (std::is_same_v<U, cfloat>)
      cgeev_(&jobvl, &jobvr, &n, a, &lda, w, vl, &ldvl, vr, &ldvr, work, lwork, rwork.data(), &info, 1, 1);
    else
      zgeev_(&jobvl, &jobvr, &n, a, &lda, w, vl, &ldvl, vr, &ldvr, work, lwork, rwork.data(), &info, 1, 1);
  };
  return with_workspace<U>(info, call);
}

template <typename R>
int geev_real(char jobvr, int n, R* a, int lda, R* wr, R* wi, R* vr, int ldvr) {
  int info = 0, ldvl = 1;
  const char jobvl = 'N';
  R* vl = nullptr;
  auto call = [&](R* work, const int* lwork) {
    if constexpr (std::is_same_v<R, float>)
      sgeev_(&jobvl, &jobvr, &n, a, &lda, wr, wi, vl, &ldvl, vr, &ldvr, work, lwork, &info, 1, 1);
    else
      dgeev_(&jobvl, &jobvr, &n, a, &lda, wr, wi, vl, &ldvl, vr, &ldvr, work, lwork, &info, 1, 1);
  };
  return with_workspace<R>(info, call);
}

template <typename U>
int syevd(char jobz, char uplo, int n, U* a, int lda, real_t<U>* w) {
  int info = 0, query = -1, iw = 0;
  U wq{};
  real_t<U> rq{};
  auto call = [&](U* work, const int* lwork, real_t<U>* rwork, const int* lrwork, int* iwork, const int* liwork) {
    if constexpr (std::is_same_v<U, float>)
      ssyevd_(&jobz, &uplo, &n, a, &lda, w, work, lwork, iwork, liwork, &info, 1, 1);
    else if constexpr (std::is_same_v<U, double>)
      dsyevd_(&jobz, &uplo, &n, a, &lda, w, work, lwork, iwork, liwork, &info, 1, 1);
    else if constexpr (std::is_same_v<U, cfloat>)
      cheevd_(&jobz, &uplo, &n, a, &lda, w, work, lwork, rwork, lrwork, iwork, liwork, &info, 1, 1);
    else
      static_assert(sizeof(U) == 0, "syevd: float, double or complex64");
  };
  call(&wq, &query, &rq, &query, &iw, &query);
  if (info != 0) return info;
  int lwork = work_size(wq), lrwork = work_size(rq), liwork = std::max(1, iw);
  std::vector<U> work(lwork);
  std::vector<real_t<U>> rwork(lrwork);
  std::vector<int> iwork(liwork);
  call(work.data(), &lwork, rwork.data(), &lrwork, iwork.data(), &liwork);
  return info;
}

template <typename U>
ColMajorBatch<U> load(const array& in) {
  ColMajorBatch<U> b;
  const int nd = in.ndim();
  b.rows = in.shape(nd - 2);
  b.cols = in.shape(nd - 1);
  b.count = 1;
  for (int d = 0; d < nd - 2; ++d) b.count *= in.shape(d);
  b.data.resize(in.size());
  if (in.size() == 0) return b;
  // Destination strides in element units: the last two axes swap roles.
  Strides dst(nd);
  int64_t mat = static_cast<int64_t>(b.rows) * b.cols;
  for (int d = nd - 3; d >= 0; --d) {
    dst[d] = mat;
    mat *= in.shape(d);
  }
  dst[nd - 2] = 1;
  dst[nd - 1] = b.rows;
  auto layout = cpu::collapse_dims(in.shape(), {in.strides(), dst});
  dispatch_dtype(in.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = in.data<T>();
    U* out = b.data.data();
    cpu::for_each_offset<2>(layout, [&](const int64_t* off) { out[off[1]] = cast_value<U>(src[off[0]]); });
  });
  return b;
}

template <typename U>
void store(const std::vector<U>& values, array& out) {
  cpu::allocate_row_contiguous(out);
  dispatch_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* dst = out.data<T>();
    for (size_t i = 0, n = out.size(); i < n; ++i) dst[i] = cast_value<T>(values[i]);
  });
}

#define ALLOY_LAPACK_INSTANTIATE_REAL(U)                   \
  template int potrf<U>(char, int, U*, int);               \
  template int getrf<U>(int, int, U*, int, int*);          \
  template int getri<U>(int, U*, int, const int*);         \
  template int trtri<U>(char, int, U*, int);               \
  template int geqrf<U>(int, int, U*, int, U*);            \
  template int orgqr<U>(int, int, int, U*, int, const U*); \
  template int syevd<U>(char, char, int, U*, int, U*);
ALLOY_LAPACK_INSTANTIATE_REAL(float)
ALLOY_LAPACK_INSTANTIATE_REAL(double)
#undef ALLOY_LAPACK_INSTANTIATE_REAL
template int syevd<cfloat>(char, char, int, cfloat*, int, float*);
template int gesdd<float>(char, int, int, float*, int, float*, float*, int, float*, int);
template int gesdd<double>(char, int, int, double*, int, double*, double*, int, double*, int);
template int gesdd<cfloat>(char, int, int, cfloat*, int, float*, cfloat*, int, cfloat*, int);
template int geev<cfloat>(char, int, cfloat*, int, cfloat*, cfloat*, int);
template int geev<cdouble>(char, int, cdouble*, int, cdouble*, cdouble*, int);
template int geev_real<float>(char, int, float*, int, float*, float*, float*, int);
template int geev_real<double>(char, int, double*, int, double*, double*, double*, int);
#define ALLOY_LAPACK_INSTANTIATE_IO(U)             \
  template ColMajorBatch<U> load<U>(const array&); \
  template void store<U>(const std::vector<U>&, array&);
ALLOY_LAPACK_INSTANTIATE_IO(float)
ALLOY_LAPACK_INSTANTIATE_IO(double)
ALLOY_LAPACK_INSTANTIATE_IO(cfloat)
ALLOY_LAPACK_INSTANTIATE_IO(cdouble)
ALLOY_LAPACK_INSTANTIATE_IO(uint32_t)
#undef ALLOY_LAPACK_INSTANTIATE_IO

}  // namespace alloy::lapack
