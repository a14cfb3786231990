// SIGINT and SIGALRM stop the CPU kernels that are running, so Ctrl-C and an
// alarm (seed 003's launch_with_timeout) interrupt a long or endless eval.
//
// Before a launch, arm_interrupts() puts a handler in front of the one the
// program installed for each of those signals (Python's, which only sets a
// flag that the interpreter reads once the eval returns). The handler calls
// that one first, then wakes a watcher thread, which stops every launch in
// progress the way a timeout does: threadgroups not started are skipped and
// the threads inside the kernel jump out. The launch then throws
// alloy::KernelInterrupted; the Python layer runs the program's handler
// (KeyboardInterrupt, or whatever the alarm handler raises).
//
// A signal whose disposition is the default or "ignore" is left alone.
#pragma once

#include <atomic>

#include "jit/cpu_faults.h"

namespace alloy::jit {

// Installs the handler in front of the program's own for SIGINT and SIGALRM
// (again, when the program replaced it since). A few system calls.
void arm_interrupts();

// Marks one launch as stoppable by an interrupt while it is alive.
class InterruptScope {
 public:
  InterruptScope(std::atomic<int>* cancel, StoppableThreads* threads);
  // A wait stopped another way (the GPU's cancellation flag): the watcher
  // thread calls stop(arg) when a signal comes.
  InterruptScope(void (*stop)(void*), void* arg);
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;
  // The signal that stopped this launch, or 0.
  int signal() const { return signal_.load(); }

 private:
  friend struct InterruptRegistry;
  std::atomic<int>* cancel_ = nullptr;
  StoppableThreads* threads_ = nullptr;
  void (*stop_)(void*) = nullptr;
  void* stop_arg_ = nullptr;
  std::atomic<int> signal_{0};
};

}  // namespace alloy::jit
