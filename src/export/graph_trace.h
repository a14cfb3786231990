// A function's graph between its inputs and outputs, recorded once and
// replayed on new inputs: the file of export_function (primitives encoded)
// and the cache of compile (the live primitives themselves).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "alloy/export.h"
#include "export/primitive_codec.h"

namespace alloy::detail {

struct ExportedNode {
  export_detail::EncodedPrimitive primitive;  // export: the class and its fields
  std::shared_ptr<Primitive> live;            // compile: the traced primitive, reused
  std::vector<uint32_t> inputs;               // value numbers
  std::vector<Shape> shapes;
  std::vector<Dtype> dtypes;
};

// Values are numbered: positional inputs, keyword inputs (by name),
// constants, then each node's outputs; nodes come after their inputs.
struct ExportedTrace {
  bool shapeless = false;
  std::vector<std::pair<Shape, Dtype>> args;
  std::vector<std::pair<std::string, std::pair<Shape, Dtype>>> kwargs;  // sorted by name
  std::vector<array> constants;
  std::vector<ExportedNode> nodes;
  std::vector<uint32_t> outputs;
};

// Export: primitives encoded (custom functions followed into their body,
// constants copied to the host). Compile: inputs become tracers, primitives
// (custom functions' own nodes included) are kept as they are.
enum class TraceMode { Export, Compile };

ExportedTrace trace_graph(const ExportableFunction& fun, const ExportArgs& args, const ExportKwargs& kwargs,
                          bool shapeless, TraceMode mode);
// Same dtypes, and the same shapes (ranks when shapeless, unless `exact`).
bool trace_matches(const ExportedTrace& t, const ExportArgs& args, const ExportKwargs& kwargs, bool exact = false);
// The trace's outputs rebuilt (lazily) on these inputs.
std::vector<array> replay_graph(const ExportedTrace& t, const ExportArgs& args, const ExportKwargs& kwargs);

}  // namespace alloy::detail
