// Deep lazy graphs on the GPU as CUDA graphs (graph_eval.cpp): what the rest
// of the backend needs to know while a thread records its nodes' launches.
#pragma once

#include <cstdint>

#include "alloy/allocator.h"
#include "jit/cuda_driver.h"

namespace alloy::cuda {

// The private stream this thread records into while it captures a tape, else
// null: stream_for() answers it for every Alloy stream meanwhile.
inline thread_local cuda_driver::CUstream t_capture_stream = nullptr;

// A block freed while this thread captures is held until the graph has been
// launched: handed back now, another thread could reuse it for work that runs
// before the recorded work does. True when it was held.
bool defer_free_while_capturing(const Buffer& b);

// Tapes run as one graph launch so far in this process (tests, benchmarks).
uint64_t graph_launches();

}  // namespace alloy::cuda
