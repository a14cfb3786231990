// Host time per primitive kind spent in eval, for finding launch overhead:
// with ALLOY_EVAL_PROFILE=1 the totals are printed to stderr at exit.
#pragma once

#include <chrono>

namespace alloy::eval_profile {

bool enabled();  // ALLOY_EVAL_PROFILE=1, read once
void record(const char* primitive, std::chrono::steady_clock::duration host_time);

}  // namespace alloy::eval_profile
