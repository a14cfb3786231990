// Crossing devices: arrays produced on one device and consumed on another.
#pragma once

#include <string>
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
// The stream of that primitive, or null outside an eval.
const Stream* evaluating_stream();
// Orders the work of stream `s` after the queued work of other GPU streams
// that produced or last used the inputs (backend/cuda/transfer.cpp); those
// inputs are then marked as used by several streams.
void order_inputs_on(const std::vector<array>& inputs, const Stream& s);

// Runs the nodes of an eval's tape, in order, as one CUDA graph when every
// node can be recorded and the tape's shape was evaluated before
// (backend/cuda/graph_eval.cpp); false when it ran nothing. `run` evaluates
// one node; `running` follows the node being run, as in eval.
bool run_tape_as_graph(const std::vector<array>& tape, void (*run)(const array&), const array*& running);

// Blocks until the work producing `outputs` is done (GPU streams).
void synchronize_streams_for(const std::vector<array>& outputs);

// GPU memory made before the last GPU fault died with its context
// (backend/cuda/fault.h): Buffer::generation != gpu_context_generation().
unsigned gpu_context_generation();
// What reading such an array says.
std::string gpu_memory_lost_message();
inline bool gpu_memory_lost(const Data& d) {
  return d.buffer.device.type == Device::gpu && d.buffer.generation != gpu_context_generation();
}

}  // namespace alloy
