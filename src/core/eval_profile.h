// Host time per primitive kind spent in eval, for finding launch overhead:
// with ALLOY_EVAL_PROFILE=1 the totals are printed to stderr at exit.
#pragma once

#include <chrono>

namespace alloy::eval_profile {

bool enabled();  // ALLOY_EVAL_PROFILE=1, read once
void record(const char* primitive, std::chrono::steady_clock::duration host_time);

// Runs `f`, recording its host time under `what` when profiling is on.
template <class F>
void timed(const char* what, F&& f) {
  if (!enabled()) {
    f();
    return;
  }
  const auto t0 = std::chrono::steady_clock::now();
  f();
  record(what, std::chrono::steady_clock::now() - t0);
}

}  // namespace alloy::eval_profile
