// metal_kernel's bounds-checked mode on the host side: turning the report a
// checked launch leaves (msl/runtime/bounds_report.h) into the error the
// user reads. Both backends and the MLX plugin share it.
#pragma once

#include <string>

#include "fast/kernel_cache.h"
#include "msl/runtime/bounds_report.h"

namespace alloy::fast {

// "out-of-bounds read of input 'x' (input 0) at index 9; it has 8 elements.
// Thread (9, 0, 0), source line 3:\n    <the user's line>": what a checked
// launch's report says of one access.
std::string describe_out_of_bounds(const KernelVariant& v, const alloy_msl::BoundsAccess& a);

// Throws std::runtime_error naming the kernel, the buffer (input/output i,
// or threadgroup array), the index, its size, the thread and the user's line;
// `why`, when given, replaces the closing note (that bounds_check is on).
[[noreturn]] void throw_bounds_fault(const KernelVariant& v, const alloy_msl::BoundsReport& r,
                                     const std::string& why = "");

// Line `line` (1-based) of `text`, without its newline; "" past the end.
std::string source_line(const std::string& text, int line);

}  // namespace alloy::fast
