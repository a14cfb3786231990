// Arrays made from parameters alone: arange, linspace, eye. Values are
// computed in double without fused multiply-add (the host rounds the product
// and the sum separately) and converted with the host's rules, so both
// devices give the same elements.
#pragma once

#include "kernel_common.cuh"

#define ALLOY_KERNEL_arange(T)                                                          \
  extern "C" __global__ void arange(T* out, double start, double step, int64_t n) {     \
    for (int64_t e = alloy::global_thread(); e < n; e += alloy::grid_threads())         \
      out[e] = alloy::cast_value<T>(__dadd_rn(start, __dmul_rn(double(e), step)));                          \
  }

// The last point is exactly `stop` (numpy's rule).
#define ALLOY_KERNEL_linspace(T)                                                                     \
  extern "C" __global__ void linspace(T* out, double start, double step, double stop, int64_t n) {  \
    for (int64_t e = alloy::global_thread(); e < n; e += alloy::grid_threads())                      \
      out[e] = alloy::cast_value<T>(n > 1 && e == n - 1 ? stop : __dadd_rn(start, __dmul_rn(double(e), step)));          \
  }

#define ALLOY_KERNEL_eye(T)                                                                          \
  extern "C" __global__ void eye(T* out, int64_t cols, int64_t k, int64_t n) {                       \
    for (int64_t e = alloy::global_thread(); e < n; e += alloy::grid_threads())                      \
      out[e] = alloy::cast_value<T>(int((e % cols) - (e / cols) == k));                              \
  }
