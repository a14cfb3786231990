// Reverse and forward mode over the lazy graph. Tracing marks the primals
// (fresh Identity nodes flagged as tracers); every node built from a tracer
// is a tracer too, so the part of the graph to differentiate is exactly the
// tracers reachable from the outputs.
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <functional>

#include "alloy/ops.h"
#include "alloy/primitive.h"
#include "alloy/transforms.h"
#include "primitives/layout.h"
#include "transforms/tracer.h"

namespace alloy {

namespace detail {

array make_tracer(const array& primal) {
  array t(primal.shape(), primal.dtype(), std::make_shared<Identity>(to_stream({})), {primal});
  t.set_tracer(true);
  return t;
}

}  // namespace detail

using detail::make_tracer;

namespace {


// Tracer nodes reachable from `outputs`, inputs before users, one entry per
// primitive (siblings share it), stopping at the `stop` arrays.
std::vector<array> traced_tape(const std::vector<array>& outputs, const std::unordered_set<const void*>& stop) {
  std::vector<array> tape;
  std::unordered_set<const void*> visited;
  std::vector<std::pair<array, size_t>> stack;
  for (auto& o : outputs) {
    if (!o.is_tracer() || visited.count(o.id())) continue;
    visited.insert(o.id());
    stack.emplace_back(o, 0);
    while (!stack.empty()) {
      auto& [a, next] = stack.back();
      if (!stop.count(a.id()) && next < a.inputs().size()) {
        const array& in = a.inputs()[next++];
        if (in.is_tracer() && !visited.count(in.id())) {
          visited.insert(in.id());
          stack.emplace_back(in, 0);
        }
        continue;
      }
      if (!stop.count(a.id()) && a.has_primitive()) tape.push_back(a);
      for (auto& s : a.siblings()) visited.insert(s.id());
      stack.pop_back();
    }
  }
  return tape;
}

using CotangentsFor = std::function<std::vector<array>(const std::vector<array>& outputs)>;

// Reverse mode, with the cotangents chosen once the outputs are known.
std::pair<std::vector<array>, std::vector<array>> vjp_impl(const Function& fun, const std::vector<array>& primals,
                                                           const CotangentsFor& cotangents_for) {
  detail::TransformScope scope;
  std::vector<array> tracers;
  std::unordered_set<const void*> stop;
  for (auto& p : primals) {
    tracers.push_back(make_tracer(p));
    stop.insert(tracers.back().id());
  }
  std::vector<array> outputs = fun(tracers);
  std::vector<array> cotangents = cotangents_for(outputs);
  std::unordered_map<const void*, array> cot;
  auto accumulate = [&](const array& target, const array& g) {
    auto it = cot.find(target.id());
    if (it == cot.end()) {
      cot.emplace(target.id(), g);
    } else {
      it->second = add(it->second, g);
    }
  };
  for (size_t i = 0; i < outputs.size(); ++i) accumulate(outputs[i], astype(cotangents[i], outputs[i].dtype()));

  std::vector<array> tape = traced_tape(outputs, stop);
  // The arrays a gradient flows to: those computed from the primals other
  // than through stop_gradient. Only they are a node's argnums, so an index
  // computed from a primal (argmax(x) given to take_along_axis) reaches the
  // gather's vjp, which refuses it as MLX does, while stop_gradient(argmax(x))
  // does not.
  std::unordered_set<const void*> live(stop);
  for (const array& node : tape) {
    if (dynamic_cast<const StopGradient*>(&node.primitive())) continue;
    bool from_primal = false;
    for (const array& in : node.inputs()) from_primal = from_primal || live.count(in.id());
    if (!from_primal) continue;
    for (const array& o : node.outputs()) live.insert(o.id());
  }
  for (auto it = tape.rbegin(); it != tape.rend(); ++it) {
    std::vector<array> outs = it->outputs();
    std::vector<array> out_cots;
    bool any = false;
    for (auto& o : outs) {
      auto c = cot.find(o.id());
      if (c != cot.end()) {
        out_cots.push_back(c->second);
        any = true;
      } else {
        out_cots.push_back(zeros_like(o));
      }
    }
    if (!any) continue;
    const auto& inputs = it->inputs();
    std::vector<int> argnums;
    for (size_t j = 0; j < inputs.size(); ++j) {
      if (live.count(inputs[j].id())) argnums.push_back(static_cast<int>(j));
    }
    if (argnums.empty()) continue;
    std::vector<array> in_cots = it->primitive().vjp(inputs, out_cots, argnums, outs);
    for (size_t k = 0; k < argnums.size() && k < in_cots.size(); ++k) {
      accumulate(inputs[argnums[k]], in_cots[k]);
    }
    for (auto& o : outs) cot.erase(o.id());  // free what no one reads again
  }

  std::vector<array> grads;
  for (size_t i = 0; i < tracers.size(); ++i) {
    auto c = cot.find(tracers[i].id());
    grads.push_back(c != cot.end() ? c->second : zeros_like(primals[i]));
  }
  return {outputs, grads};
}

}  // namespace

std::pair<std::vector<array>, std::vector<array>> vjp(const Function& fun, const std::vector<array>& primals,
                                                      const std::vector<array>& cotangents) {
  return vjp_impl(fun, primals, [&](const std::vector<array>& outputs) {
    if (cotangents.size() != outputs.size()) {
      throw std::invalid_argument("[vjp] got " + std::to_string(cotangents.size()) + " cotangents for " +
                                  std::to_string(outputs.size()) + " outputs.");
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (cotangents[i].shape() != outputs[i].shape()) {
        throw std::invalid_argument("[vjp] cotangent " + std::to_string(i) + " does not match the shape of output " +
                                    std::to_string(i) + ".");
      }
    }
    return cotangents;
  });
}

std::pair<std::vector<array>, std::vector<array>> jvp(const Function& fun, const std::vector<array>& primals,
                                                      const std::vector<array>& tangents) {
  if (tangents.size() != primals.size()) {
    throw std::invalid_argument("[jvp] got " + std::to_string(tangents.size()) + " tangents for " +
                                std::to_string(primals.size()) + " primals.");
  }
  detail::TransformScope scope;
  std::vector<array> tracers;
  std::unordered_set<const void*> stop;
  std::unordered_map<const void*, array> tan;
  for (size_t i = 0; i < primals.size(); ++i) {
    if (tangents[i].shape() != primals[i].shape()) {
      throw std::invalid_argument("[jvp] tangent " + std::to_string(i) + " does not match the shape of primal " +
                                  std::to_string(i) + ".");
    }
    tracers.push_back(make_tracer(primals[i]));
    stop.insert(tracers.back().id());
    tan.emplace(tracers.back().id(), tangents[i]);
  }
  std::vector<array> outputs = fun(tracers);
  std::vector<array> tape = traced_tape(outputs, stop);
  for (auto& node : tape) {
    const auto& inputs = node.inputs();
    std::vector<int> argnums;
    std::vector<array> in_tans;
    for (size_t j = 0; j < inputs.size(); ++j) {
      auto t = tan.find(inputs[j].id());
      if (t != tan.end()) {
        argnums.push_back(static_cast<int>(j));
        in_tans.push_back(t->second);
      }
    }
    if (argnums.empty()) continue;
    std::vector<array> outs = node.outputs();
    std::vector<array> out_tans = node.primitive().jvp(inputs, in_tans, argnums);
    for (size_t k = 0; k < outs.size() && k < out_tans.size(); ++k) tan.insert_or_assign(outs[k].id(), out_tans[k]);
  }
  std::vector<array> out_tangents;
  for (auto& o : outputs) {
    auto t = tan.find(o.id());
    out_tangents.push_back(t != tan.end() ? t->second : zeros_like(o));
  }
  return {outputs, out_tangents};
}

// Integer and boolean inputs have gradients too, as in MLX: the backward
// pass runs in their dtypes (grad of sum(2 x) for int32 x is int32 2s).
ValueAndGradFn value_and_grad(const Function& fun, const std::vector<int>& argnums) {
  if (argnums.empty()) throw std::invalid_argument("[grad] argnums must name at least one argument.");
  return [fun, argnums](const std::vector<array>& inputs) {
    for (int a : argnums) {
      if (a < 0 || a >= static_cast<int>(inputs.size())) {
        throw std::invalid_argument("[grad] argnum " + std::to_string(a) + " is out of range for " +
                                    std::to_string(inputs.size()) + " arguments.");
      }
    }
    std::vector<array> diff_inputs;
    for (int a : argnums) diff_inputs.push_back(inputs[a]);
    auto inner = [&](const std::vector<array>& d) {
      std::vector<array> all = inputs;
      for (size_t k = 0; k < argnums.size(); ++k) all[argnums[k]] = d[k];
      std::vector<array> outs = fun(all);
      if (outs.empty() || outs[0].size() != 1 || outs[0].ndim() != 0) {
        throw std::invalid_argument(
            "[grad] the function must return a scalar (0-d) array as its first output; got shape " +
            (outs.empty() ? std::string("nothing") : std::to_string(outs[0].ndim()) + "-d of size " +
                                                          std::to_string(outs[0].size())) +
            ".");
      }
      return outs;
    };
    // Cotangent 1 for the value, 0 for auxiliary outputs.
    auto [outs, grads] = vjp_impl(inner, diff_inputs, [](const std::vector<array>& o) {
      std::vector<array> cots;
      for (size_t i = 0; i < o.size(); ++i) cots.push_back(i == 0 ? ones_like(o[i]) : zeros_like(o[i]));
      return cots;
    });
    return std::make_pair(outs, grads);
  };
}

std::function<std::vector<array>(const std::vector<array>&)> grad(const Function& fun,
                                                                   const std::vector<int>& argnums) {
  auto vg = value_and_grad(fun, argnums);
  return [vg](const std::vector<array>& inputs) { return vg(inputs).second; };
}

}  // namespace alloy
