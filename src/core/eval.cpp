// Evaluation: order the unevaluated part of the graph, run each primitive on
// its stream's device, then drop the graph above results nobody traces.
#include <stdexcept>
#include <unordered_set>

#include "alloy/primitive.h"
#include "alloy/transforms.h"
#include "core/streams.h"

namespace alloy {

namespace {

// Post-order over unevaluated nodes, iteratively (graphs can be very deep).
std::vector<array> build_tape(const std::vector<array>& outputs) {
  std::vector<array> tape;
  std::unordered_set<const void*> visited;
  std::vector<std::pair<array, size_t>> stack;
  for (auto& o : outputs) {
    if (o.is_evaluated() || visited.count(o.id())) continue;
    stack.emplace_back(o, 0);
    visited.insert(o.id());
    while (!stack.empty()) {
      auto& [a, next] = stack.back();
      if (next < a.inputs().size()) {
        const array& in = a.inputs()[next++];
        if (!in.is_evaluated() && !visited.count(in.id())) {
          visited.insert(in.id());
          stack.emplace_back(in, 0);
        }
        continue;
      }
      tape.push_back(a);
      for (auto& s : a.siblings()) visited.insert(s.id());
      stack.pop_back();
    }
  }
  return tape;
}

}  // namespace

void eval(std::vector<array> outputs) {
  std::vector<array> tape = build_tape(outputs);
  for (auto& a : tape) {
    if (a.is_evaluated()) continue;  // produced with a sibling
    if (!a.has_primitive()) {
      throw std::runtime_error("[eval] an array has neither data nor a primitive to compute it.");
    }
    std::vector<array> outs = a.outputs();
    eval_primitive(a.primitive(), a.inputs(), outs);
    for (auto& o : outs) o.set_status(array::Status::evaluated);
  }
  // Results that no transformation traces no longer need their graph.
  for (auto& a : tape) {
    if (!a.is_tracer() && detail::transform_depth() == 0) {
      for (auto& o : a.outputs()) o.detach();
    }
  }
  synchronize_streams_for(outputs);
}

void eval_primitive(Primitive& p, const std::vector<array>& inputs, std::vector<array>& outputs) {
  if (p.device().type == Device::cpu) {
    p.eval_cpu(inputs_on_host(inputs), outputs);
  } else {
    p.eval_gpu(inputs_on_device(inputs, p.stream()), outputs);
  }
}

void Primitive::eval_gpu(const std::vector<array>&, std::vector<array>&) {
  throw std::runtime_error(std::string("[") + name() + "] has no GPU implementation yet.");
}

std::vector<array> Primitive::vjp(const std::vector<array>&, const std::vector<array>&, const std::vector<int>&,
                                  const std::vector<array>&) {
  throw std::invalid_argument(std::string("[") + name() + "] is not differentiable (no vjp).");
}

std::vector<array> Primitive::jvp(const std::vector<array>&, const std::vector<array>&, const std::vector<int>&) {
  throw std::invalid_argument(std::string("[") + name() + "] has no forward-mode derivative (no jvp).");
}

namespace detail {
namespace {
thread_local int depth = 0;
}
int transform_depth() { return depth; }
TransformScope::TransformScope() { ++depth; }
TransformScope::~TransformScope() { --depth; }
}  // namespace detail

}  // namespace alloy
