// A GPU fault (an illegal address, a trap) poisons a CUDA context: every
// later call fails. The backend reports it naming the custom kernels of the
// failing batch, then rebuilds the context so new work runs, where the
// driver allows it (driver 580 does not: see gpu_unusable()). Everything tied
// to the old context is dropped lazily: each cache remembers the
// context_generation() it was filled in and empties itself (leaking the old
// handles, which died with the context) when that changed; arrays whose
// memory lived there say so when used. Lazily, because the fault surfaces
// inside calls that may hold a cache's lock.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "jit/cuda_driver.h"

namespace alloy::fast {
struct KernelVariant;
}

namespace alloy::cuda {

// True once a fault could not be recovered from (the driver refused to make
// a context again): every GPU call then raises gpu_unusable_message().
bool gpu_unusable();
std::string gpu_unusable_message();
// Incremented by every rebuild; GPU Buffers carry the one they were made in.
unsigned context_generation();
// A custom kernel is about to be launched: a fault from here on names it.
// Returns its launch number for note_launched.
uint64_t note_custom_launch(const std::shared_ptr<fast::KernelVariant>& v);
// Its launch on `stream` has returned: a wait on that stream that starts
// after this covers it.
void note_launched(uint64_t launch, cuda_driver::CUstream stream);
// The launches noted launched so far, taken before a wait...
uint64_t batch_mark();
// ...which then waited for `streams` without a fault: the launches on them
// noted launched up to the mark are over. (Others, on streams another
// thread is waiting for or launched since, may still fault.)
void end_batch(uint64_t mark, const std::vector<cuda_driver::CUstream>& streams);
// "after a GPU fault in kernel 'k' (CUDA_ERROR_ILLEGAL_ADDRESS)" for the last rebuild.
std::string last_fault_summary();
// Installs the handler cuda_driver::check calls on a context fault (once).
void install_fault_handler();

}  // namespace alloy::cuda
