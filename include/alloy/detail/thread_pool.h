// A small header-only thread pool shared by the whole library (CPU kernels,
// CPU ops). One primitive: parallel_for(n, fn) calls fn(i) for i in [0, n)
// across the workers and the calling thread, and returns when all are done.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdlib>
#include <algorithm>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace alloy::detail {

class ThreadPool {
 public:
  // `workers` threads besides the callers of parallel_for.
  explicit ThreadPool(size_t workers) {
    threads_.reserve(workers);
    for (size_t i = 0; i < workers; ++i) threads_.emplace_back([this] { worker_loop(); });
  }
  ~ThreadPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto& t : threads_) t.join();
  }
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // The process-wide pool: $ALLOY_NUM_THREADS threads in all (default: the
  // hardware's), i.e. that many minus one workers plus the caller.
  static ThreadPool& global() {
    static ThreadPool pool(default_threads() - 1);
    return pool;
  }
  static size_t default_threads() {
    if (const char* env = std::getenv("ALLOY_NUM_THREADS")) {
      long v = std::atol(env);
      if (v >= 1) return static_cast<size_t>(v);
    }
    size_t hw = std::thread::hardware_concurrency();
    return hw ? hw : 1;
  }

  // Threads that run parallel_for work: the workers and the caller.
  size_t size() const { return threads_.size() + 1; }

  // Calls fn(i) for every i in [0, n), each exactly once, spread over the
  // workers and the calling thread. A call made from inside a worker (nested)
  // runs inline. The first exception thrown by fn is rethrown here after
  // every index has been processed or skipped.
  template <class F> void parallel_for(size_t n, F&& fn) {
    if (n == 0) return;
    if (n == 1 || threads_.empty() || in_worker()) {
      for (size_t i = 0; i < n; ++i) fn(i);
      return;
    }
    Job job;
    job.n = n;
    job.ctx = &fn;
    job.call = [](void* ctx, size_t i) { (*static_cast<std::remove_reference_t<F>*>(ctx))(i); };
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(&job);
    }
    wake_.notify_all();
    work_on(job);
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [&] { return job.finished == job.n && job.users == 0; });
    if (job.error) std::rethrow_exception(job.error);
  }

 private:
  struct Job {
    size_t n = 0;
    void* ctx = nullptr;
    void (*call)(void*, size_t) = nullptr;
    std::atomic<size_t> next{0};
    size_t finished = 0;  // guarded by mutex_
    size_t users = 0;     // workers inside work_on; guarded by mutex_
    std::exception_ptr error;
  };

  static bool& in_worker() {
    thread_local bool flag = false;
    return flag;
  }

  // Claims indices until none are left; returns how many this thread ran.
  void work_on(Job& job) {
    size_t ran = 0;
    std::exception_ptr error;
    for (size_t i; (i = job.next.fetch_add(1, std::memory_order_relaxed)) < job.n; ++ran) {
      if (error) continue;  // after a failure, skip the remaining indices
      try {
        job.call(job.ctx, i);
      } catch (...) {
        error = std::current_exception();
      }
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (error && !job.error) job.error = error;
    job.finished += ran;
    // Everything is claimed: take the job off the queue so idle workers sleep
    // and none picks it up after its caller returns.
    auto it = std::find(queue_.begin(), queue_.end(), &job);
    if (it != queue_.end()) queue_.erase(it);
    if (job.finished == job.n) done_.notify_all();
  }

  void worker_loop() {
    in_worker() = true;
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      Job* job = queue_.front();
      if (job->next.load(std::memory_order_relaxed) >= job->n) {
        queue_.pop_front();
        continue;
      }
      ++job->users;
      lock.unlock();
      work_on(*job);
      lock.lock();
      --job->users;
      if (job->users == 0) done_.notify_all();
    }
  }

  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::deque<Job*> queue_;
  bool stop_ = false;
};

}  // namespace alloy::detail
