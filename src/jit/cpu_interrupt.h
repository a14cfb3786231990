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
//
// A launch prepared slowly (its kernel still compiling when the alarm rings)
// opens an InterruptWindow first: a signal that comes inside the window stops
// the launch that follows, as one during it would; otherwise the program's
// handler would have run alone and the endless kernel would start anyway.
#pragma once

#include <atomic>
#include <cstdint>

#include "jit/cpu_faults.h"

namespace alloy::jit {

// Installs the handler in front of the program's own for SIGINT and SIGALRM
// (again, when the program replaced it since). A few system calls.
void arm_interrupts();

// See above. Windows nest (an inner one keeps the outer one's start); the
// InterruptScopes opened on this thread while one is open see its signal.
// A closed window (open = false) costs nothing, for launches whose kernel is
// already compiled.
class InterruptWindow {
 public:
  explicit InterruptWindow(bool open = true);
  // Where a window started, for the thread that launches when that is not
  // the one that opened it (alloy.mlx queues its CPU launches to MLX's
  // stream thread): a window made from it there counts the same signals.
  struct Mark {
    bool open = false;
    std::uint64_t seen_at = 0;
  };
  Mark mark() const { return {open_, seen_at_}; }
  explicit InterruptWindow(Mark continued);
  ~InterruptWindow();
  InterruptWindow(const InterruptWindow&) = delete;
  InterruptWindow& operator=(const InterruptWindow&) = delete;
  // The signal that came since the window opened, or 0.
  int signal() const;

 private:
  bool open_ = false;
  std::uint64_t seen_at_ = 0;  // signals seen when it opened
  InterruptWindow* outer_ = nullptr;
};

// Marks one launch as stoppable by an interrupt while it is alive; if a
// window open on this thread saw a signal already, it starts stopped.
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
