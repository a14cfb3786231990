// The node an Alloy-run Metal kernel adds to MLX's graph: MLX schedules it
// like any primitive; its eval runs Alloy's translation of the kernel.
#pragma once

#include <vector>

#include "fast/prepared_launch.h"
#include "mlx/primitives.h"

namespace alloy::mlx {

namespace mxc = ::mlx::core;

class MetalKernelPrimitive : public mxc::Primitive {
 public:
  MetalKernelPrimitive(mxc::Stream s, fast::PreparedLaunch launch) : mxc::Primitive(s), launch_(std::move(launch)) {}

  const char* name() const override { return "MetalKernel"; }
  void eval_cpu(const std::vector<mxc::array>& inputs, std::vector<mxc::array>& outputs) override;
  void eval_gpu(const std::vector<mxc::array>& inputs, std::vector<mxc::array>& outputs) override;
  std::vector<mxc::array> vjp(const std::vector<mxc::array>& primals, const std::vector<mxc::array>& cotangents,
                              const std::vector<int>& argnums, const std::vector<mxc::array>& outputs) override;
  std::vector<mxc::array> jvp(const std::vector<mxc::array>& primals, const std::vector<mxc::array>& tangents,
                              const std::vector<int>& argnums) override;
  bool is_equivalent(const mxc::Primitive& other) const override;

  const fast::PreparedLaunch& launch() const { return launch_; }

 private:
  fast::PreparedLaunch launch_;
};

// The GPU half lives in liballoy_mlx_cuda.so, loaded on first use: it calls
// into MLX's CUDA backend, which a CPU-only libmlx does not have.
using EvalGpuFn = void (*)(const fast::PreparedLaunch&, const mxc::Stream&, const std::vector<mxc::array>&,
                           std::vector<mxc::array>&);
inline constexpr const char* kEvalGpuSymbol = "alloy_mlx_eval_gpu";

}  // namespace alloy::mlx
