// The float32 matmul precision setting (alloy/runtime.h): read by the GPU
// matmul for every float32 product.
#include <atomic>
#include <cstdlib>
#include <stdexcept>

#include "alloy/runtime.h"

namespace alloy {

namespace {

bool parse_tf32(const std::string& precision) {
  if (precision == "highest") return false;
  if (precision == "high" || precision == "medium") return true;
  throw std::invalid_argument("[set_float32_matmul_precision] unknown precision '" + precision +
                              "': use \"highest\" (float32, the default) or \"high\" (TF32 tensor cores on the GPU).");
}

std::atomic<bool>& tf32() {
  static std::atomic<bool> on = [] {
    const char* env = std::getenv("ALLOY_FLOAT32_MATMUL_PRECISION");
    if (!env || !*env) return false;
    try {
      return parse_tf32(env);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("ALLOY_FLOAT32_MATMUL_PRECISION: ") + e.what());
    }
  }();
  return on;
}

}  // namespace

void set_float32_matmul_precision(const std::string& precision) { tf32().store(parse_tf32(precision)); }
std::string get_float32_matmul_precision() { return tf32().load() ? "high" : "highest"; }
bool float32_matmul_uses_tf32() { return tf32().load(); }

}  // namespace alloy
