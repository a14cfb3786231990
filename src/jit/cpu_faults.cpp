#include "jit/cpu_faults.h"

#include <setjmp.h>
#include <signal.h>
#include <string.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <vector>

namespace alloy::jit {
namespace {

// The last is the watchdog's stop request, not a fault.
const int kStopSignal = SIGRTMIN + 3;
const int kSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, kStopSignal};
constexpr int kNumSignals = sizeof(kSignals) / sizeof(kSignals[0]);
struct sigaction previous[kNumSignals];

// Per thread: where a fault jumps back to (null outside a kernel), and what it was.
thread_local sigjmp_buf* jump_target = nullptr;
thread_local int fault_signal = 0;
thread_local void* fault_address = nullptr;
thread_local int fault_code = 0;

void on_fault(int sig, siginfo_t* info, void* context) {
  if (jump_target) {
    fault_signal = sig;
    fault_address = info ? info->si_addr : nullptr;
    fault_code = info ? info->si_code : 0;
    sigjmp_buf* target = jump_target;
    jump_target = nullptr;
    siglongjmp(*target, 1);
  }
  if (sig == kStopSignal) return;  // it arrived after the thread left the kernel: nothing to stop
  // Not a kernel's: the handler before ours decides, as if we were not here.
  for (int i = 0; i < kNumSignals; ++i) {
    if (kSignals[i] != sig) continue;
    const struct sigaction& p = previous[i];
    if (p.sa_flags & SA_SIGINFO) {
      if (p.sa_sigaction) return p.sa_sigaction(sig, info, context);
    } else if (p.sa_handler != SIG_DFL && p.sa_handler != SIG_IGN) {
      return p.sa_handler(sig);
    }
    // Default action: restore it; returning re-runs the faulting instruction.
    sigaction(sig, &p, nullptr);
    return;
  }
}

void install_handlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < kNumSignals; ++i) sigaction(kSignals[i], &sa, &previous[i]);
  });
}

// The handler runs on an alternate stack, so a kernel that overflowed its
// (fiber) stack can still be reported. One per thread, set once, and taken
// down before its memory goes with the thread (a stack freed while still
// installed is what ASan's thread teardown trips on).
struct AlternateStack {
  std::vector<char> memory;
  ~AlternateStack() {
    if (memory.empty()) return;
    stack_t ss;
    memset(&ss, 0, sizeof(ss));
    ss.ss_flags = SS_DISABLE;
    sigaltstack(&ss, nullptr);
  }
};

void ensure_alternate_stack() {
  thread_local AlternateStack stack;
  if (!stack.memory.empty()) return;
  stack.memory.resize(64 * 1024);
  stack_t ss;
  memset(&ss, 0, sizeof(ss));
  ss.ss_sp = stack.memory.data();
  ss.ss_size = stack.memory.size();
  sigaltstack(&ss, nullptr);
}

std::string describe(int sig, void* address, int code) {
  if (sig == kStopSignal) return "stopped";
  // x86 reports a general protection fault with no address (SI_KERNEL): an
  // aligned vector instruction at an address not a multiple of its size, or
  // an address outside the canonical range (a wild pointer).
  if (sig == SIGSEGV && code == SI_KERNEL && address == nullptr) {
    return "SIGSEGV: invalid memory access (a general protection fault: a vector load or store at an address "
           "that is not a multiple of its size, or a wild pointer)";
  }
  const char* name = sig == SIGSEGV ? "SIGSEGV: invalid memory access"
                   : sig == SIGBUS  ? "SIGBUS: misaligned or unmapped memory access"
                   : sig == SIGFPE  ? "SIGFPE: arithmetic fault (an integer division by zero?)"
                                    : "SIGILL: illegal instruction";
  char buf[160];
  if (sig == SIGSEGV || sig == SIGBUS) {
    std::snprintf(buf, sizeof(buf), "%s at address %p", name, address);
  } else {
    std::snprintf(buf, sizeof(buf), "%s", name);
  }
  return buf;
}

}  // namespace

bool StoppableThreads::add(pthread_t t) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (stopping_) return false;  // joined after the stop
  threads_.push_back(t);
  return true;
}

void StoppableThreads::remove(pthread_t t) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t i = 0; i < threads_.size(); ++i) {
    if (pthread_equal(threads_[i], t)) {
      threads_.erase(threads_.begin() + i);
      return;
    }
  }
}

void StoppableThreads::stop_all() {
  std::lock_guard<std::mutex> lock(mutex_);
  stopping_ = true;
  for (pthread_t t : threads_) pthread_kill(t, kStopSignal);
}

bool run_catching_faults(const std::function<void()>& fn, std::string& what, StoppableThreads* stoppable) {
  install_handlers();
  ensure_alternate_stack();
  sigjmp_buf target;
  sigjmp_buf* outer = jump_target;  // a nested launch on this thread
  // Off the stoppable list with no jump target: a stop request arriving while
  // the list's lock is held finds no target and is ignored (jumping out would
  // leave the lock held).
  auto leave = [&] {
    jump_target = nullptr;
    if (stoppable) stoppable->remove(pthread_self());
    jump_target = outer;
  };
  if (sigsetjmp(target, 1) != 0) {
    leave();
    what = describe(fault_signal, fault_address, fault_code);
    return false;
  }
  jump_target = &target;  // before it is on the list, so a stop always finds it
  if (stoppable && !stoppable->add(pthread_self())) {
    jump_target = outer;
    what = describe(kStopSignal, nullptr, 0);
    return false;
  }
  fn();
  leave();
  return true;
}

}  // namespace alloy::jit
