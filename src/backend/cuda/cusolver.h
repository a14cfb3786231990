// cuSOLVER (dense), loaded at run time (dlopen libcusolver.so.12/11 from the
// CUDA toolkit) like cuBLAS, so building needs no CUDA library. Only the
// float/double routines the factorization primitives use are bound; each
// works on one column-major matrix on `stream` and writes LAPACK's info to
// the device int at `info`.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "alloy/array.h"
#include "backend/cuda/device.h"

namespace alloy::cuda::cusolver {

// True when libcusolver loads and binds (never throws).
bool available();
const std::string& unavailable_reason();

// GPU memory held until its owner has synchronized the stream that uses it
// (the allocator hands freed blocks straight back out).
struct Scratch {
  std::vector<std::shared_ptr<Data>> held;
  std::vector<std::shared_ptr<std::vector<char>>> host;  // host workspaces of asynchronous calls
  // Fresh GPU memory; the Data is returned for views over it.
  std::shared_ptr<Data> alloc(size_t bytes);
  // A routine's workspace: one buffer reused by every call of a batch (they
  // run in order on one stream), grown when a call needs more.
  void* workspace(size_t bytes);

 private:
  std::shared_ptr<Data> work_;
};

template <typename U>
void potrf(CUstream s, bool upper, int n, U* a, int lda, int* info, Scratch& scratch);
template <typename U>
void getrf(CUstream s, int m, int n, U* a, int lda, int* ipiv, int* info, Scratch& scratch);
// Solves op(A) X = B with getrf's factors (no transpose).
template <typename U>
void getrs(CUstream s, int n, int nrhs, const U* a, int lda, const int* ipiv, U* b, int ldb, int* info);
template <typename U>
void geqrf(CUstream s, int m, int n, U* a, int lda, U* tau, int* info, Scratch& scratch);
template <typename U>
void orgqr(CUstream s, int m, int n, int k, U* a, int lda, const U* tau, int* info, Scratch& scratch);
template <typename U>
void syevd(CUstream s, bool vectors, bool upper, int n, U* a, int lda, U* w, int* info, Scratch& scratch);
// Inverse of a triangular matrix in place (cusolverDnXtrtri); the other triangle is left as it was.
template <typename U>
void trtri(CUstream s, bool upper, int n, U* a, int lda, int* info, Scratch& scratch);
// Requires m >= n (cuSOLVER's gesvd); `vectors`: all of U (m x m) and V^T (n x n).
template <typename U>
void gesvd(CUstream s, bool vectors, int m, int n, U* a, int lda, U* sv, U* u, int ldu, U* vt, int ldvt, int* info,
           Scratch& scratch);

}  // namespace alloy::cuda::cusolver
