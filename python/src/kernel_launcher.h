// The callable a custom-kernel definition returns (mx.fast.metal_kernel and
// mx.fast.cuda_kernel): `k(inputs=..., output_shapes=..., ...)` builds the
// lazy outputs of one launch.
#pragma once

#include <string>

#include "alloy/fast.h"
#include "bindings.h"

// `api` names the definition in messages ("metal_kernel"); it must outlive
// the launcher (a string literal).
nb::object make_kernel_launcher(const char* api, alloy::fast::CustomKernelFunction fn, const std::string& name);

// Registers the launcher's Python type on `m` (once, from init_fast).
void init_kernel_launcher(nb::module_& m);
