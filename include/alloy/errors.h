// Exceptions of Alloy's own beyond the standard ones (std::invalid_argument
// for bad arguments, std::runtime_error for failures).
#pragma once

#include <stdexcept>

namespace alloy {

// A kernel launch stopped because it ran past its timeout (Python: TimeoutError).
class KernelTimeout : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace alloy
