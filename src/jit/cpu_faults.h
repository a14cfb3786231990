// A memory fault inside a kernel on the CPU (an out-of-bounds write, a read
// through a bad pointer) is turned into an error of that launch instead of
// killing the process: SIGSEGV, SIGBUS, SIGFPE and SIGILL raised by code run
// under run_catching_faults on the faulting thread jump back to it.
//
// What is abandoned stays abandoned: the faulting threadgroup's fibers and
// any lock its threads held are not released, and memory the kernel wrote
// before the fault keeps what it wrote. Faults outside a kernel go to the
// handler that was installed before (Python's faulthandler, or the default
// action), as if Alloy were not there.
#pragma once

#include <pthread.h>

#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace alloy::jit {

// The threads running one launch's kernel code, which a watchdog can stop
// (a launch past its timeout): stop_all() sends each a signal whose handler
// jumps back to its run_catching_faults, as a fault does.
class StoppableThreads {
 public:
  // False (and not added) once stop_all() has run: the thread must not
  // enter the kernel. (Signalling itself here would jump out of add() with
  // the list's lock held.)
  bool add(pthread_t t);
  void remove(pthread_t t);
  void stop_all();

 private:
  std::mutex mutex_;
  std::vector<pthread_t> threads_;
  bool stopping_ = false;
};

// Runs fn() on this thread. Returns true when it returned; false when a
// fault signal stopped it, with `what` describing the fault ("SIGSEGV: invalid
// memory access at address 0x..."), or when `stoppable`'s stop_all() stopped
// it ("stopped").
bool run_catching_faults(const std::function<void()>& fn, std::string& what,
                         StoppableThreads* stoppable = nullptr);

}  // namespace alloy::jit
