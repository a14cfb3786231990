// Shared by the elementwise, comparison and reduction op files.
#pragma once

#include <vector>

#include "alloy/ops.h"
#include "backend/common/binary_ops.h"

namespace alloy {

// Broadcast shape of several operands; the error names the op and all shapes.
Shape broadcast_shapes_for(const char* name, const std::vector<Shape>& shapes);

// A Binary node computing in `compute` (inputs cast and broadcast first).
array binary_node(BinaryOp op, const char* name, const array& a, const array& b, Dtype compute, SD s);

}  // namespace alloy
