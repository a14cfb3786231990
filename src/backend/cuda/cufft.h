// cuFFT, loaded at run time (dlopen libcufft.so.12 from CUDA 13, .so.11 from
// CUDA 12) like cuBLAS, so building needs no CUDA library.
#pragma once

#include <string>

#include "backend/cuda/device.h"

namespace alloy::cuda::cufft {

// cufftType values (cufft.h).
enum Type : int { R2C = 0x2a, C2R = 0x2c, C2C = 0x29 };

// True when libcufft loads and binds (never throws).
bool available();
const std::string& unavailable_reason();

// `batch` dense 1-D transforms of logical length n, one after another in
// memory: complex rows of n (C2C), real rows of n in and complex rows of
// n/2 + 1 out (R2C), or the reverse (C2R, which may overwrite `in`).
// Unnormalised; inverse only matters for C2C. Runs on `stream`.
void execute(CUstream stream, Type type, long long n, long long batch, bool inverse, void* in, void* out);

}  // namespace alloy::cuda::cufft
