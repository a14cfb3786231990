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

// A kernel launch stopped by SIGINT or SIGALRM (Ctrl-C, an alarm): Python
// then runs the program's own handler (KeyboardInterrupt, or what the alarm
// handler raises); the outputs of the stopped launch are not valid.
class KernelInterrupted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An argument of the wrong type (Python: TypeError): a float16 array where a
// kernel parameter is `device const float*`.
class ArgumentTypeError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

}  // namespace alloy
