// Crossing devices: arrays produced on one device and consumed on another.
#pragma once

#include <vector>

#include "alloy/array.h"

namespace alloy {

// Inputs as the CPU backend needs them: GPU-resident ones are copied to host
// memory (after their producing stream finished).
std::vector<array> inputs_on_host(const std::vector<array>& inputs);
// Inputs as the GPU backend needs them on stream `s`.
std::vector<array> inputs_on_device(const std::vector<array>& inputs, const Stream& s);
// The device of the primitive this thread is evaluating (eval_primitive),
// or null outside an eval.
const Device* evaluating_device();

// Blocks until the work producing `outputs` is done (GPU streams).
void synchronize_streams_for(const std::vector<array>& outputs);

}  // namespace alloy
