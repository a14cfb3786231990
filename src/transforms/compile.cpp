// compile: a cache of traced graphs (export's trace, with the live
// primitives) per input signature. A shapeless trace serves new shapes where
// every primitive's output shapes follow from its inputs'; where one holds
// its traced shape, the new shapes get a trace of their own.
#include "alloy/compile.h"

#include <memory>
#include <mutex>
#include <stdexcept>

#include "export/graph_trace.h"
#include "transforms/fuse_elementwise.h"

namespace alloy {

namespace {

// A trace, and the same trace with its elementwise chains fused (null when
// there is nothing to fuse, or it is shapeless: a fused node has no rule for
// new shapes).
struct CompiledTrace {
  std::shared_ptr<const detail::ExportedTrace> trace;
  std::shared_ptr<const detail::ExportedTrace> fused;
};

CompiledTrace with_fusion(std::shared_ptr<const detail::ExportedTrace> t) {
  CompiledTrace c{std::move(t), nullptr};
  if (c.trace->shapeless) return c;
  int made = 0;
  auto fused = std::make_shared<const detail::ExportedTrace>(detail::fuse_elementwise(*c.trace, &made));
  if (made > 0) c.fused = std::move(fused);
  return c;
}

std::vector<array> replay(const CompiledTrace& c, const std::vector<array>& inputs) {
  // Under a transformation (grad, vmap, jvp) the inputs are tracers: the
  // graph must be made of primitives with derivative and batching rules.
  bool traced = false;
  for (const array& a : inputs) traced = traced || a.is_tracer();
  return detail::replay_graph(c.fused && !traced ? *c.fused : *c.trace, inputs, {});
}

}  // namespace

Function compile(Function fun, bool shapeless) {
  struct Cache {
    std::mutex mutex;
    std::vector<CompiledTrace> traces;
  };
  auto cache = std::make_shared<Cache>();
  return [fun = std::move(fun), shapeless, cache](const std::vector<array>& inputs) -> std::vector<array> {
    std::vector<CompiledTrace> candidates;
    {
      std::lock_guard<std::mutex> lock(cache->mutex);
      candidates = cache->traces;
    }
    // An exact signature first, then (shapeless) one of the same ranks.
    for (int pass = 0; pass < 2; ++pass) {
      for (const auto& c : candidates) {
        const detail::ExportedTrace& t = *c.trace;
        if (pass == 0 && detail::trace_matches(t, inputs, {}, /*exact=*/true)) return replay(c, inputs);
        if (pass == 1 && t.shapeless && detail::trace_matches(t, inputs, {})) {
          try {
            return replay(c, inputs);
          } catch (const std::invalid_argument&) {
            // A primitive holds its traced shape: trace these shapes.
          }
        }
      }
    }
    ExportableFunction traced = [&fun](const ExportArgs& a, const ExportKwargs&) { return fun(a); };
    auto t = std::make_shared<const detail::ExportedTrace>(
        detail::trace_graph(traced, inputs, {}, shapeless, detail::TraceMode::Compile));
    CompiledTrace c = with_fusion(t);
    {
      std::lock_guard<std::mutex> lock(cache->mutex);
      cache->traces.push_back(c);
    }
    return replay(c, inputs);
  };
}

}  // namespace alloy
