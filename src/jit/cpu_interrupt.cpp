#include "jit/cpu_interrupt.h"

#include <semaphore.h>
#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <mutex>
#include <thread>
#include <vector>

namespace alloy::jit {

namespace {

constexpr int kSignals[] = {SIGINT, SIGALRM};

struct sigaction previous[NSIG];
sem_t wake;
// The last signal seen by the handler (read by the watcher), and how many
// it has seen (windows compare counts).
std::atomic<int> last_signal{0};
std::atomic<std::uint64_t> signals_seen{0};
static_assert(std::atomic<std::uint64_t>::is_always_lock_free, "the handler counts signals");

thread_local InterruptWindow* open_window = nullptr;

void on_signal(int sig, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  const struct sigaction& prev = previous[sig];
  if (prev.sa_flags & SA_SIGINFO) {
    if (prev.sa_sigaction) prev.sa_sigaction(sig, info, context);
  } else if (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN && prev.sa_handler) {
    prev.sa_handler(sig);
  }
  last_signal.store(sig);
  signals_seen.fetch_add(1);
  sem_post(&wake);  // async-signal-safe
  errno = saved_errno;
}

}  // namespace

struct InterruptRegistry {
  std::mutex mutex;
  std::vector<InterruptScope*> active;

  static InterruptRegistry& get() {
    static auto* r = new InterruptRegistry();  // never destroyed: the watcher outlives static teardown
    return *r;
  }

  void watch() {
    for (;;) {
      if (sem_wait(&wake) != 0) continue;  // EINTR
      const int sig = last_signal.load();
      std::lock_guard<std::mutex> lock(mutex);
      for (InterruptScope* s : active) stop(s, sig);
    }
  }

  // Under `mutex`.
  static void stop(InterruptScope* s, int sig) {
    s->signal_.store(sig);
    if (s->stop_) {
      s->stop_(s->stop_arg_);
      return;
    }
    s->cancel_->store(1, std::memory_order_relaxed);
    s->threads_->stop_all();
  }

  void enter(InterruptScope* s);
};

void arm_interrupts() {
  static std::once_flag started;
  std::call_once(started, [] {
    sem_init(&wake, 0, 0);
    std::thread([] { InterruptRegistry::get().watch(); }).detach();
  });
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  for (int sig : kSignals) {
    struct sigaction current {};
    if (sigaction(sig, nullptr, &current) != 0) continue;
    if ((current.sa_flags & SA_SIGINFO) && current.sa_sigaction == on_signal) continue;  // ours, still in front
    if (!(current.sa_flags & SA_SIGINFO) && (current.sa_handler == SIG_DFL || current.sa_handler == SIG_IGN)) {
      continue;  // the default action or "ignore": not ours to change
    }
    previous[sig] = current;
    struct sigaction ours {};
    ours.sa_sigaction = on_signal;
    ours.sa_flags = SA_SIGINFO | (current.sa_flags & (SA_ONSTACK | SA_RESTART));
    ours.sa_mask = current.sa_mask;
    sigaction(sig, &ours, nullptr);
  }
}

InterruptWindow::InterruptWindow(bool open) : open_(open) {
  if (!open_) return;
  outer_ = open_window;
  if (outer_) {
    seen_at_ = outer_->seen_at_;
  } else {
    arm_interrupts();  // from here on the signals come to on_signal, which counts them
    seen_at_ = signals_seen.load();
  }
  open_window = this;
}

InterruptWindow::InterruptWindow(Mark continued) : open_(continued.open) {
  if (!open_) return;
  // Armed where it opened; the launch that follows arms again (the program
  // may have replaced its handler since).
  seen_at_ = continued.seen_at;
  outer_ = open_window;
  open_window = this;
}

InterruptWindow::~InterruptWindow() {
  if (open_) open_window = outer_;
}

int InterruptWindow::signal() const {
  // The handler stores the signal before counting it.
  return !open_ || signals_seen.load() == seen_at_ ? 0 : last_signal.load();
}

void InterruptRegistry::enter(InterruptScope* s) {
  std::lock_guard<std::mutex> lock(mutex);
  active.push_back(s);
  // Under the lock, so the watcher cannot stop it a second time meanwhile.
  if (const int sig = open_window ? open_window->signal() : 0) stop(s, sig);
}

InterruptScope::InterruptScope(std::atomic<int>* cancel, StoppableThreads* threads)
    : cancel_(cancel), threads_(threads) {
  InterruptRegistry::get().enter(this);
}

InterruptScope::InterruptScope(void (*stop)(void*), void* arg) : stop_(stop), stop_arg_(arg) {
  InterruptRegistry::get().enter(this);
}

InterruptScope::~InterruptScope() {
  auto& r = InterruptRegistry::get();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.active.erase(std::remove(r.active.begin(), r.active.end(), this), r.active.end());
}

}  // namespace alloy::jit
