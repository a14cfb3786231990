// The error a JIT compiler (host C++ or NVRTC) reports for a translated kernel.
#pragma once

#include <stdexcept>
#include <string>

namespace alloy::jit {

// what(): a one-line summary; log(): the compiler's raw output, which the
// caller maps to the user's lines (alloy::msl::map_diagnostics).
class CompileError : public std::runtime_error {
 public:
  CompileError(const std::string& summary, std::string log) : std::runtime_error(summary), log_(std::move(log)) {}
  const std::string& log() const { return log_; }

 private:
  std::string log_;
};

}  // namespace alloy::jit
