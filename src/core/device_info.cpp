// mx.device_info / mx.device_count: this machine's values under MLX's keys.
#include <sys/utsname.h>
#include <unistd.h>

#include <fstream>

#include "alloy/runtime.h"
#include "core/gpu_availability.h"

namespace alloy {

namespace {

std::string cpu_architecture() {
  utsname u{};
  return uname(&u) == 0 ? std::string(u.machine) : std::string("unknown");
}

// The CPU's model as /proc/cpuinfo names it, else the architecture.
std::string cpu_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) {
        auto start = line.find_first_not_of(' ', colon + 1);
        if (start != std::string::npos) return line.substr(start);
      }
    }
  }
  return cpu_architecture();
}

}  // namespace

DeviceInfo device_info(const Device& d) {
  if (d.type == Device::cpu) return {{"architecture", cpu_architecture()}, {"device_name", cpu_name()}};
  if (!gpu_is_available()) {
    throw std::invalid_argument("[device_info] " + to_string(d) + " is not available: " + gpu_unavailable_reason());
  }
  const size_t memory = gpu_total_memory();
  return {{"architecture", gpu_arch()},
          {"device_name", gpu_name()},
          {"memory_size", memory},
          // One allocation may take the whole device; the working set Metal
          // recommends is the memory a process can fill without paging.
          {"max_buffer_length", memory},
          {"max_recommended_working_set_size", memory}};
}

int device_count(Device::DeviceType type) {
  if (type == Device::cpu) return 1;
  return gpu_is_available() ? 1 : 0;
}

}  // namespace alloy
