// The source generators of every op kernel family, and a catalog of
// representative instantiations that the compile test (no GPU needed) runs
// through NVRTC. Each generator returns the source of the module holding the
// one kernel `name` (see kernels.h).
#pragma once

#include <string>
#include <vector>

#include "alloy/dtype.h"
#include "backend/cuda/softmax.h"

namespace alloy::cuda {

std::string creation_source(Dtype t, const std::string& name);
std::string reduce_source(const std::string& op, Dtype in, Dtype acc, Dtype out, const std::string& name);
std::string arg_reduce_source(const std::string& op, Dtype t, const std::string& name);
// variance.cuh's kernels for float dtype `t`, computing in `acc` (float32 or float64).
std::string variance_source(Dtype t, Dtype acc, const std::string& name);
// Kernel `name` of a row softmax `plan`, for Softmax or LogSumExp (`op`)
// over rows of `t` (a float dtype).
std::string row_softmax_source(const std::string& op, Dtype t, const RowSoftmaxPlan& plan, const std::string& name);
std::string scan_source(const std::string& op, Dtype t, const std::string& name);
std::string gather_source(Dtype t, Dtype index, const std::string& name);
// `type` as spelled in CUDA ("uint32_t", or "alloy::bits128" for 16-byte words).
std::string gather_source(const std::string& type, Dtype index, const std::string& name);
std::string scatter_source(int mode, Dtype t, Dtype index, const std::string& name);
std::string random_source(const std::string& name);
// The fill of custom-kernel outputs given an init_value (kernel alloy_fill_bits).
std::string fill_bits_source();
std::string gemm_source(Dtype t, const std::string& name);
std::string sort_source(Dtype t, const std::string& name);

struct CatalogEntry {
  std::string key;   // family key + "/" + kernel name
  std::string name;  // the kernel (extern "C") the module must define
  std::string source;
};
// Representative instantiations of every family and kernel form: every op
// code on one dtype, and every dtype through the conversion and the
// dtype-sensitive paths (complex math, 16-bit floats, atomics).
std::vector<CatalogEntry> kernel_catalog();

}  // namespace alloy::cuda
