// mx.compile's fusion: a traced graph rewritten so that each chain of
// elementwise primitives on the CPU (unary and binary ops, casts, scalars
// broadcast into them) whose intermediates nothing else reads becomes one
// FusedElementwise node (primitives/fused.h).
#pragma once

#include "export/graph_trace.h"

namespace alloy::detail {

// The same trace with its fusable chains replaced; `fused` counts the nodes
// made (0: nothing to fuse, and the trace is returned as it is).
ExportedTrace fuse_elementwise(const ExportedTrace& t, int* fused = nullptr);

}  // namespace alloy::detail
