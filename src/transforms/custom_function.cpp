// mx.custom_function: a function whose derivatives come from user rules.
// Its outputs are produced by a CustomTransforms node whose inputs are the
// primals followed by the function's own outputs (cut from the trace, so
// differentiation never walks into the body); the node shares their memory.
#include <stdexcept>
#include <string>

#include "alloy/ops.h"
#include "alloy/primitive.h"
#include "alloy/transforms.h"
#include "custom_function.h"

namespace alloy {

namespace {

class CustomTransforms : public Primitive {
 public:
  CustomTransforms(Stream s, size_t num_primals, Function fun, std::optional<CustomVjp> vjp,
                   std::optional<CustomJvp> jvp, std::optional<detail::CustomVjpOf> vjp_of = std::nullopt)
      : Primitive(s),
        num_primals_(num_primals),
        fun_(std::move(fun)),
        vjp_(std::move(vjp)),
        jvp_(std::move(jvp)),
        vjp_of_(std::move(vjp_of)) {}
  const char* name() const override { return "CustomTransforms"; }

  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override { share(inputs, outputs); }
  void eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) override { share(inputs, outputs); }

  std::vector<array> vjp(const std::vector<array>& inputs, const std::vector<array>& cotangents,
                         const std::vector<int>& argnums, const std::vector<array>& outputs) override {
    std::vector<array> primals(inputs.begin(), inputs.begin() + num_primals_);
    std::vector<array> all;
    if (vjp_of_) {
      std::vector<int> wanted;
      for (int a : argnums) {
        if (a < static_cast<int>(num_primals_)) wanted.push_back(a);
      }
      all = (*vjp_of_)(primals, cotangents, wanted);
    } else if (vjp_) {
      all = (*vjp_)(primals, cotangents, outputs);
    } else {
      all = alloy::vjp(fun_, primals, cotangents).second;
    }
    if (all.size() != num_primals_) {
      throw std::invalid_argument("[custom_function] the vjp returned " + std::to_string(all.size()) +
                                  " cotangents for " + std::to_string(num_primals_) + " primals.");
    }
    std::vector<array> out;
    for (int a : argnums) {
      if (a >= static_cast<int>(num_primals_)) {
        out.push_back(zeros_like(inputs[a]));
        continue;
      }
      const array& g = all[a];
      if (g.shape() != primals[a].shape()) {
        throw std::invalid_argument("[custom_function] the vjp's cotangent for primal " + std::to_string(a) +
                                    " has the wrong shape.");
      }
      out.push_back(g);
    }
    return out;
  }

  std::vector<array> jvp(const std::vector<array>& inputs, const std::vector<array>& tangents,
                         const std::vector<int>& argnums) override {
    std::vector<array> primals(inputs.begin(), inputs.begin() + num_primals_);
    if (jvp_) return (*jvp_)(primals, tangents, argnums);
    // Without a rule: forward mode through the body.
    std::vector<array> full_tangents;
    for (size_t i = 0; i < num_primals_; ++i) full_tangents.push_back(zeros_like(primals[i]));
    for (size_t k = 0; k < argnums.size(); ++k) {
      if (argnums[k] < static_cast<int>(num_primals_)) full_tangents[argnums[k]] = tangents[k];
    }
    return alloy::jvp(fun_, primals, full_tangents).second;
  }

 private:
  void share(const std::vector<array>& inputs, std::vector<array>& outputs) {
    for (size_t i = 0; i < outputs.size(); ++i) outputs[i].copy_shared_buffer(inputs[num_primals_ + i]);
  }
  size_t num_primals_;
  Function fun_;
  std::optional<CustomVjp> vjp_;
  std::optional<CustomJvp> jvp_;
  std::optional<detail::CustomVjpOf> vjp_of_;
};

}  // namespace

namespace {

Function make_custom_function(Function fun, std::optional<CustomVjp> fun_vjp, std::optional<CustomJvp> fun_jvp,
                              std::optional<detail::CustomVjpOf> vjp_of) {
  return [fun = std::move(fun), fun_vjp = std::move(fun_vjp), fun_jvp = std::move(fun_jvp),
          vjp_of = std::move(vjp_of)](const std::vector<array>& primals) -> std::vector<array> {
    std::vector<array> outputs = fun(primals);
    bool traced = false;
    for (auto& p : primals) traced = traced || p.is_tracer();
    if (!traced) return outputs;  // nothing differentiates this call
    std::vector<array> inputs = primals;
    std::vector<Shape> shapes;
    std::vector<Dtype> dtypes;
    for (auto& o : outputs) {
      array cut = stop_gradient(o);
      cut.set_tracer(false);
      inputs.push_back(cut);
      shapes.push_back(o.shape());
      dtypes.push_back(o.dtype());
    }
    // The node only shares its inputs' memory, so any stream serves.
    Stream s = to_stream({});
    return array::make_arrays(std::move(shapes), dtypes,
                              std::make_shared<CustomTransforms>(s, primals.size(), fun, fun_vjp, fun_jvp, vjp_of),
                              inputs);
  };
}

}  // namespace

Function custom_function(Function fun, std::optional<CustomVjp> fun_vjp, std::optional<CustomJvp> fun_jvp) {
  return make_custom_function(std::move(fun), std::move(fun_vjp), std::move(fun_jvp), std::nullopt);
}

namespace detail {
Function custom_function_of(Function fun, CustomVjpOf fun_vjp, CustomJvp fun_jvp) {
  return make_custom_function(std::move(fun), std::nullopt, std::move(fun_jvp), std::move(fun_vjp));
}
}  // namespace detail

}  // namespace alloy
