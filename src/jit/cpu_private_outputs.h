// Copies of a CPU launch's add-only atomic outputs, one per worker running
// at a time (msl/private_adds.h says which outputs qualify).
//
// A chunk of threadgroups takes a free slot for as long as it runs: slot 0
// is the launch's own buffers, slot k > 0 a table whose add-only outputs
// point at zeroed copies (made on the slot's first use). Its adds are then
// plain: no other thread writes the same memory. After the launch, merge()
// adds each used copy into its output and zeroes it again; the copies go
// back to a process-wide cache of zeroed memory, so the next launch's first
// touch of them costs no page faults.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

namespace alloy::detail {
class ThreadPool;
}

namespace alloy::jit {

struct PrivateOutput {
  enum class Kind { Float32, Int32, Int64 };  // how the copies add (integers wrap)
  unsigned buffer = 0;   // index in the launch's buffer table
  std::size_t elements = 0;
  Kind kind = Kind::Float32;
  std::size_t bytes() const { return elements * (kind == Kind::Int64 ? 8 : 4); }
};

// Whether copies pay for a launch of `threads` threads over `workers`
// workers: each add saves a compare-and-swap loop, each copy costs a pass
// over its outputs at the end. Copies are taken for at most 6 output
// elements a thread, and while every worker's copies fit the cache of
// zeroed memory (1 GiB).
bool worth_private_outputs(const std::vector<PrivateOutput>& outputs, unsigned long long threads, std::size_t workers);

class PrivateOutputs {
 public:
  // `buffers`: the launch's table of `buffer_count` pointers.
  PrivateOutputs(void* const* buffers, std::size_t buffer_count, std::vector<PrivateOutput> outputs,
                 std::size_t slots);
  ~PrivateOutputs();  // copies not merged (a failed launch) are freed, not cached
  PrivateOutputs(const PrivateOutputs&) = delete;
  PrivateOutputs& operator=(const PrivateOutputs&) = delete;

  // A free slot (the lowest), and its buffer table; throws std::bad_alloc
  // when a copy cannot be made.
  std::size_t acquire();
  void* const* buffers(std::size_t slot);
  void release(std::size_t slot);

  // Adds the used copies into the outputs, over `pool`.
  void merge(detail::ThreadPool& pool);

 private:
  struct Copy {
    void* data = nullptr;
    std::size_t capacity = 0;
  };
  void* const* own_;
  std::vector<PrivateOutput> outputs_;
  std::vector<std::vector<void*>> tables_;       // per slot
  std::vector<std::vector<Copy>> copies_;        // per slot > 0, per output
  std::vector<bool> busy_, used_;
  std::mutex mutex_;
  bool merged_ = false;
};

}  // namespace alloy::jit
