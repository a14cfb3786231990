// compile: a cache of traced graphs (export's trace, with the live
// primitives) per input signature. A shapeless trace serves new shapes where
// every primitive's output shapes follow from its inputs'; where one holds
// its traced shape, the new shapes get a trace of their own.
#include "alloy/compile.h"

#include <memory>
#include <mutex>
#include <stdexcept>

#include "export/graph_trace.h"

namespace alloy {

Function compile(Function fun, bool shapeless) {
  struct Cache {
    std::mutex mutex;
    std::vector<std::shared_ptr<const detail::ExportedTrace>> traces;
  };
  auto cache = std::make_shared<Cache>();
  return [fun = std::move(fun), shapeless, cache](const std::vector<array>& inputs) -> std::vector<array> {
    std::vector<std::shared_ptr<const detail::ExportedTrace>> candidates;
    {
      std::lock_guard<std::mutex> lock(cache->mutex);
      candidates = cache->traces;
    }
    // An exact signature first, then (shapeless) one of the same ranks.
    for (int pass = 0; pass < 2; ++pass) {
      for (const auto& t : candidates) {
        if (pass == 0 && detail::trace_matches(*t, inputs, {}, /*exact=*/true)) return detail::replay_graph(*t, inputs, {});
        if (pass == 1 && t->shapeless && detail::trace_matches(*t, inputs, {})) {
          try {
            return detail::replay_graph(*t, inputs, {});
          } catch (const std::invalid_argument&) {
            // A primitive holds its traced shape: trace these shapes.
          }
        }
      }
    }
    ExportableFunction traced = [&fun](const ExportArgs& a, const ExportKwargs&) { return fun(a); };
    auto t = std::make_shared<const detail::ExportedTrace>(
        detail::trace_graph(traced, inputs, {}, shapeless, detail::TraceMode::Compile));
    {
      std::lock_guard<std::mutex> lock(cache->mutex);
      cache->traces.push_back(t);
    }
    return detail::replay_graph(*t, inputs, {});
  };
}

}  // namespace alloy
