#include "alloy/device.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>

#include "core/gpu_availability.h"

namespace alloy {

std::string to_string(const Device& d) {
  return std::string(d.type == Device::cpu ? "Device(cpu, " : "Device(gpu, ") + std::to_string(d.index) + ")";
}

bool is_available(const Device& d) {
  if (d.type == Device::cpu) return d.index == 0;
  return d.index == 0 && gpu_is_available();
}

namespace {
std::mutex& device_mutex() {
  static std::mutex m;
  return m;
}
Device& default_device_storage() {
  // The GPU is the default where one is present, as in MLX.
  static Device d = gpu_is_available() ? Device(Device::gpu, 0) : Device(Device::cpu, 0);
  return d;
}
std::atomic<int> next_stream_index{2};
Stream& default_stream_storage(Device::DeviceType t) {
  static Stream cpu_stream(0, Device(Device::cpu, 0));
  static Stream gpu_stream(1, Device(Device::gpu, 0));
  return t == Device::cpu ? cpu_stream : gpu_stream;
}
// The device that work asked for `d` runs on. Code written for a GPU (MLX
// code passes stream=mx.gpu to its kernels) must also run in CI machines
// without one, so by default an unavailable GPU falls back to the CPU after
// a one-time note on stderr; ALLOY_GPU_FALLBACK=error makes it an error.
Device usable(const Device& d, const char* op) {
  if (is_available(d)) return d;
  const char* policy = std::getenv("ALLOY_GPU_FALLBACK");
  const bool strict = policy && std::strcmp(policy, "error") == 0;
  if (d.type != Device::gpu || d.index != 0 || strict) {
    throw std::invalid_argument(std::string("[") + op + "] " + to_string(d) + " is not available" +
                                (d.type == Device::gpu ? std::string(": ") + gpu_unavailable_reason() : "."));
  }
  static std::once_flag noted;
  std::call_once(noted, [] {
    std::fprintf(stderr,
                 "alloy: mx.gpu is not available (%s); work asked of it runs on the CPU. "
                 "Set ALLOY_GPU_FALLBACK=error to make that an error.\n",
                 gpu_unavailable_reason().c_str());
  });
  return Device(Device::cpu, 0);
}

}  // namespace

const Device& default_device() { return default_device_storage(); }

void set_default_device(const Device& d) {
  Device target = usable(d, "set_default_device");
  std::lock_guard<std::mutex> lock(device_mutex());
  default_device_storage() = target;
}

Stream default_stream(Device d) { return default_stream_storage(usable(d, "default_stream").type); }

void set_default_stream(Stream s) {
  std::lock_guard<std::mutex> lock(device_mutex());
  default_stream_storage(s.device.type) = s;
}

Stream new_stream(Device d) { return Stream(next_stream_index++, usable(d, "new_stream")); }

Stream to_stream(StreamOrDevice s) {
  switch (s.kind) {
    case StreamOrDevice::Kind::stream: return s.stream;
    case StreamOrDevice::Kind::device: return default_stream_storage(usable(s.device, "stream").type);
    case StreamOrDevice::Kind::none: break;
  }
  return default_stream(default_device());
}

}  // namespace alloy
