// One launch of a user's kernel (metal_kernel / cuda_kernel).
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>

#include "alloy/primitive.h"
#include "fast/kernel_cache.h"

namespace alloy {

class CustomKernel : public Primitive {
 public:
  CustomKernel(Stream s, std::string user_name, std::shared_ptr<fast::KernelVariant> variant,
               std::array<unsigned, 3> grid, std::array<unsigned, 3> threadgroup, std::optional<double> init_value,
               bool ensure_row_contiguous, unsigned shared_memory = 0)
      : Primitive(s),
        user_name_(std::move(user_name)),
        variant_(std::move(variant)),
        grid_(grid),
        threadgroup_(threadgroup),
        init_value_(init_value),
        ensure_row_contiguous_(ensure_row_contiguous),
        shared_memory_(shared_memory) {}

  const char* name() const override { return "CustomKernel"; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  void eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  std::vector<array> vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                         const std::vector<int>& argnums, const std::vector<array>& outputs) override;
  std::vector<array> jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                         const std::vector<int>& argnums) override;

  const std::string& user_name() const { return user_name_; }
  // "[metal_kernel] kernel 'name'" (or cuda_kernel): how errors name it.
  std::string label() const;
  fast::KernelVariant& variant() const { return *variant_; }
  const std::array<unsigned, 3>& grid() const { return grid_; }
  // Already clamped to the grid, per dimension.
  const std::array<unsigned, 3>& threadgroup() const { return threadgroup_; }
  const std::optional<double>& init_value() const { return init_value_; }
  bool ensure_row_contiguous() const { return ensure_row_contiguous_; }
  // Dynamic shared memory per block, in bytes (cuda_kernel's shared_memory).
  unsigned shared_memory() const { return shared_memory_; }

 private:
  const Shape& check_dims(const array& in, int index) const;
  std::string user_name_;
  std::shared_ptr<fast::KernelVariant> variant_;
  std::array<unsigned, 3> grid_, threadgroup_;
  std::optional<double> init_value_;
  bool ensure_row_contiguous_;
  unsigned shared_memory_;
};

}  // namespace alloy
