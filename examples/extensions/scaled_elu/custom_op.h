// custom_op.h -- the guide's ScaledELU primitive (seed 001), as written there
// with the include line and the namespace changed (mlx -> alloy).
#include <alloy/alloy.h>

class ScaledELU : public alloy::Primitive {
public:
  explicit ScaledELU(float alpha, alloy::Stream s)
      : alloy::Primitive(s), alpha_(alpha) {}

  void eval_cpu(
      const std::vector<alloy::array>& inputs,
      std::vector<alloy::array>& outputs
  ) override;

  void eval_gpu(
      const std::vector<alloy::array>& inputs,
      std::vector<alloy::array>& outputs
  ) override;

  // VJP for autograd support
  std::vector<alloy::array> vjp(
      const std::vector<alloy::array>& primals,
      const std::vector<alloy::array>& cotangents,
      const std::vector<int>& argnums,
      const std::vector<alloy::array>& outputs
  ) override;

private:
  float alpha_;
};

// The Python-visible entry point
alloy::array scaled_elu(alloy::array x, float alpha);
