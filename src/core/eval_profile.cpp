#include "core/eval_profile.h"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>

namespace alloy::eval_profile {
namespace {

struct Totals {
  std::mutex mu;
  std::map<std::string, std::pair<long long, double>> by_primitive;  // calls, microseconds
  ~Totals() {
    std::fprintf(stderr, "alloy eval profile (host time per primitive):\n%-24s %10s %12s %10s\n", "primitive",
                 "calls", "total us", "us/call");
    for (auto& [name, t] : by_primitive)
      std::fprintf(stderr, "%-24s %10lld %12.1f %10.2f\n", name.c_str(), t.first, t.second, t.second / t.first);
  }
};

Totals& totals() {
  static Totals t;  // printed when the process exits
  return t;
}

}  // namespace

bool enabled() {
  static const bool on = [] {
    const char* e = std::getenv("ALLOY_EVAL_PROFILE");
    return e && std::string(e) == "1";
  }();
  return on;
}

void record(const char* primitive, std::chrono::steady_clock::duration host_time) {
  Totals& t = totals();
  std::lock_guard<std::mutex> lock(t.mu);
  auto& slot = t.by_primitive[primitive];
  slot.first += 1;
  slot.second += std::chrono::duration<double, std::micro>(host_time).count();
}

}  // namespace alloy::eval_profile
