// One launch of a kernel the user compiled (precompiled_cuda_kernel).
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "alloy/fast.h"
#include "alloy/primitive.h"

namespace alloy {

class PrecompiledCudaKernel : public Primitive {
 public:
  struct Launch {
    std::string name;                            // the kernel's symbol in the image
    std::shared_ptr<const std::string> image;    // PTX text or cubin
    std::vector<fast::ScalarArg> scalars;
    std::array<unsigned, 3> blocks{1, 1, 1}, block{1, 1, 1};
    unsigned shared_memory = 0;
    std::optional<float> init_value;
    bool ensure_row_contiguous = false;
  };
  PrecompiledCudaKernel(Stream s, Launch l) : Primitive(s), launch_(std::move(l)) {}

  const char* name() const override { return "PrecompiledCudaKernel"; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  void eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  std::vector<array> vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                         const std::vector<int>& argnums, const std::vector<array>& outputs) override;
  std::vector<array> jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                         const std::vector<int>& argnums) override;

  // "[precompiled_cuda_kernel] kernel 'name'": how errors name it.
  std::string label() const { return "[precompiled_cuda_kernel] kernel '" + launch_.name + "'"; }
  const Launch& launch() const { return launch_; }

 private:
  Launch launch_;
};

}  // namespace alloy
