// Elementwise loop skeletons: one input (map: copy, astype, unary), two
// (zip: binary) and three (select). Each has a contiguous form that moves
// 16-byte vectors, and strided forms (fixed 1-3 dims with 32-bit offsets, or
// any dims with 64-bit offsets) whose output offsets come from the layout.
// A module instantiates one of them with an ALLOY_KERNEL_<name> macro;
// the host picks a kernel by name (see backend/cuda/elementwise.cpp).
#pragma once

#include "kernel_common.cuh"

namespace alloy {

// Elements per vector access: 16 bytes of the widest operand.
template <typename A, typename B>
constexpr int vec_width() {
  constexpr int w = int(sizeof(A) > sizeof(B) ? sizeof(A) : sizeof(B));
  return w >= 16 ? 1 : 16 / w;
}

// ---- map: out = f(in)
template <typename F, typename In, typename Out, int V>
__device__ __forceinline__ void map_contig(const In* in, Out* out, int64_t n) {
  const F f;
  const int64_t nv = n / V;
  const auto* vin = reinterpret_cast<const Vec<In, V>*>(in);
  auto* vout = reinterpret_cast<Vec<Out, V>*>(out);
  for (int64_t i = global_thread(); i < nv; i += grid_threads()) {
    Vec<In, V> a = vin[i];
    Vec<Out, V> b;
#pragma unroll
    for (int j = 0; j < V; ++j) b.v[j] = f(a.v[j]);
    vout[i] = b;
  }
  for (int64_t i = nv * V + global_thread(); i < n; i += grid_threads()) out[i] = f(in[i]);
}

template <typename F, typename In, typename Out, int NDIM, typename IdxT>
__device__ __forceinline__ void map_strided(const In* in, Out* out, const cuda::StridedLayout<2>& L, int64_t n) {
  const F f;
  for (int64_t e = global_thread(); e < n; e += grid_threads()) {
    IdxT loc[2];
    cuda::elem_to_locs<NDIM>(IdxT(e), L, loc);
    out[loc[1]] = f(in[loc[0]]);
  }
}

// ---- zip: out = f(a, b); Mode 0: both vectors, 1: a scalar, 2: b scalar
template <typename F, typename T, typename Out, int V, int Mode>
__device__ __forceinline__ void zip_contig(const T* a, const T* b, Out* out, int64_t n) {
  const F f;
  const int64_t nv = n / V;
  const auto* va = reinterpret_cast<const Vec<T, V>*>(a);
  const auto* vb = reinterpret_cast<const Vec<T, V>*>(b);
  auto* vout = reinterpret_cast<Vec<Out, V>*>(out);
  const T sa = Mode == 1 ? a[0] : T();
  const T sb = Mode == 2 ? b[0] : T();
  for (int64_t i = global_thread(); i < nv; i += grid_threads()) {
    Vec<T, V> x, y;
    if constexpr (Mode != 1) x = va[i];
    if constexpr (Mode != 2) y = vb[i];
    Vec<Out, V> r;
#pragma unroll
    for (int j = 0; j < V; ++j) r.v[j] = f(Mode == 1 ? sa : x.v[j], Mode == 2 ? sb : y.v[j]);
    vout[i] = r;
  }
  for (int64_t i = nv * V + global_thread(); i < n; i += grid_threads()) {
    out[i] = f(Mode == 1 ? sa : a[i], Mode == 2 ? sb : b[i]);
  }
}

template <typename F, typename T, typename Out, int NDIM, typename IdxT>
__device__ __forceinline__ void zip_strided(const T* a, const T* b, Out* out, const cuda::StridedLayout<3>& L,
                                            int64_t n) {
  const F f;
  for (int64_t e = global_thread(); e < n; e += grid_threads()) {
    IdxT loc[3];
    cuda::elem_to_locs<NDIM>(IdxT(e), L, loc);
    out[loc[2]] = f(a[loc[0]], b[loc[1]]);
  }
}

// ---- select: out = c ? x : y
template <typename T, int V>
__device__ __forceinline__ void select_contig(const bool* c, const T* x, const T* y, T* out, int64_t n) {
  const int64_t nv = n / V;
  const auto* vc = reinterpret_cast<const Vec<bool, V>*>(c);
  const auto* vx = reinterpret_cast<const Vec<T, V>*>(x);
  const auto* vy = reinterpret_cast<const Vec<T, V>*>(y);
  auto* vout = reinterpret_cast<Vec<T, V>*>(out);
  for (int64_t i = global_thread(); i < nv; i += grid_threads()) {
    Vec<bool, V> cc = vc[i];
    Vec<T, V> a = vx[i], b = vy[i], r;
#pragma unroll
    for (int j = 0; j < V; ++j) r.v[j] = cc.v[j] ? a.v[j] : b.v[j];
    vout[i] = r;
  }
  for (int64_t i = nv * V + global_thread(); i < n; i += grid_threads()) out[i] = c[i] ? x[i] : y[i];
}

template <typename T, int NDIM, typename IdxT>
__device__ __forceinline__ void select_strided(const bool* c, const T* x, const T* y, T* out,
                                               const cuda::StridedLayout<4>& L, int64_t n) {
  for (int64_t e = global_thread(); e < n; e += grid_threads()) {
    IdxT loc[4];
    cuda::elem_to_locs<NDIM>(IdxT(e), L, loc);
    out[loc[3]] = c[loc[0]] ? x[loc[1]] : y[loc[2]];
  }
}

// Converts with the host's rules: the functor of copy/astype.
template <typename In, typename Out>
struct CastFn {
  __device__ __forceinline__ Out operator()(In x) const { return cast_value<Out>(x); }
};

}  // namespace alloy

// Entry points, one macro per kernel: a module compiles only the kernel a
// launch needs (NVRTC's optimiser and ptxas cost ~100 ms per kernel), named
// ALLOY_KERNEL_<kernel name>(functor, types...). map_v / zip_vv.. / select_v
// are the contiguous vector forms; *_s1..s3 strided over 1-3 dims with 32-bit
// offsets; *_sn any dims with 64-bit offsets.
#define ALLOY_MAP_STRIDED(name, F, In, Out, NDIM, IdxT)                                               \
  extern "C" __global__ void name(const In* in, Out* out, alloy::cuda::StridedLayout<2> L, int64_t n) { \
    alloy::map_strided<F, In, Out, NDIM, IdxT>(in, out, L, n);                                        \
  }
#define ALLOY_KERNEL_map_v(F, In, Out)                                \
  extern "C" __global__ void map_v(const In* in, Out* out, int64_t n) { \
    alloy::map_contig<F, In, Out, alloy::vec_width<In, Out>()>(in, out, n); \
  }
#define ALLOY_KERNEL_map_s1(F, In, Out) ALLOY_MAP_STRIDED(map_s1, F, In, Out, 1, int)
#define ALLOY_KERNEL_map_s2(F, In, Out) ALLOY_MAP_STRIDED(map_s2, F, In, Out, 2, int)
#define ALLOY_KERNEL_map_s3(F, In, Out) ALLOY_MAP_STRIDED(map_s3, F, In, Out, 3, int)
#define ALLOY_KERNEL_map_sn(F, In, Out) ALLOY_MAP_STRIDED(map_sn, F, In, Out, 0, int64_t)

#define ALLOY_ZIP_CONTIG(name, F, T, Out, MODE)                                        \
  extern "C" __global__ void name(const T* a, const T* b, Out* out, int64_t n) {       \
    alloy::zip_contig<F, T, Out, alloy::vec_width<T, Out>(), MODE>(a, b, out, n);      \
  }
#define ALLOY_ZIP_STRIDED(name, F, T, Out, NDIM, IdxT)                                                   \
  extern "C" __global__ void name(const T* a, const T* b, Out* out, alloy::cuda::StridedLayout<3> L,    \
                                  int64_t n) {                                                          \
    alloy::zip_strided<F, T, Out, NDIM, IdxT>(a, b, out, L, n);                                         \
  }
#define ALLOY_KERNEL_zip_vv(F, T, Out) ALLOY_ZIP_CONTIG(zip_vv, F, T, Out, 0)
#define ALLOY_KERNEL_zip_sv(F, T, Out) ALLOY_ZIP_CONTIG(zip_sv, F, T, Out, 1)
#define ALLOY_KERNEL_zip_vs(F, T, Out) ALLOY_ZIP_CONTIG(zip_vs, F, T, Out, 2)
#define ALLOY_KERNEL_zip_s1(F, T, Out) ALLOY_ZIP_STRIDED(zip_s1, F, T, Out, 1, int)
#define ALLOY_KERNEL_zip_s2(F, T, Out) ALLOY_ZIP_STRIDED(zip_s2, F, T, Out, 2, int)
#define ALLOY_KERNEL_zip_s3(F, T, Out) ALLOY_ZIP_STRIDED(zip_s3, F, T, Out, 3, int)
#define ALLOY_KERNEL_zip_sn(F, T, Out) ALLOY_ZIP_STRIDED(zip_sn, F, T, Out, 0, int64_t)

#define ALLOY_SELECT_STRIDED(name, T, NDIM, IdxT)                                                 \
  extern "C" __global__ void name(const bool* c, const T* x, const T* y, T* out,                 \
                                  alloy::cuda::StridedLayout<4> L, int64_t n) {                  \
    alloy::select_strided<T, NDIM, IdxT>(c, x, y, out, L, n);                                    \
  }
#define ALLOY_KERNEL_select_v(T)                                                                  \
  extern "C" __global__ void select_v(const bool* c, const T* x, const T* y, T* out, int64_t n) { \
    alloy::select_contig<T, alloy::vec_width<T, T>()>(c, x, y, out, n);                          \
  }
#define ALLOY_KERNEL_select_s1(T) ALLOY_SELECT_STRIDED(select_s1, T, 1, int)
#define ALLOY_KERNEL_select_s2(T) ALLOY_SELECT_STRIDED(select_s2, T, 2, int)
#define ALLOY_KERNEL_select_s3(T) ALLOY_SELECT_STRIDED(select_s3, T, 3, int)
#define ALLOY_KERNEL_select_sn(T) ALLOY_SELECT_STRIDED(select_sn, T, 0, int64_t)
