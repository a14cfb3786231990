// Until the CUDA backend lands, the GPU is reported unavailable, with a reason.
#include "core/gpu_availability.h"

namespace alloy {
bool gpu_is_available() { return false; }
std::string gpu_unavailable_reason() { return "the CUDA backend is not part of this build yet"; }
}  // namespace alloy
