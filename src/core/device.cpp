#include "alloy/device.h"

#include <atomic>
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
}  // namespace

const Device& default_device() { return default_device_storage(); }

void set_default_device(const Device& d) {
  if (!is_available(d)) {
    throw std::invalid_argument("[set_default_device] " + to_string(d) + " is not available" +
                                (d.type == Device::gpu ? std::string(": ") + gpu_unavailable_reason() : "."));
  }
  std::lock_guard<std::mutex> lock(device_mutex());
  default_device_storage() = d;
}

Stream default_stream(Device d) { return default_stream_storage(d.type); }

void set_default_stream(Stream s) {
  std::lock_guard<std::mutex> lock(device_mutex());
  default_stream_storage(s.device.type) = s;
}

Stream new_stream(Device d) {
  if (!is_available(d)) {
    throw std::invalid_argument("[new_stream] " + to_string(d) + " is not available.");
  }
  return Stream(next_stream_index++, d);
}

Stream to_stream(StreamOrDevice s) {
  switch (s.kind) {
    case StreamOrDevice::Kind::stream: return s.stream;
    case StreamOrDevice::Kind::device:
      if (!is_available(s.device)) {
        throw std::invalid_argument("[stream] " + to_string(s.device) + " is not available" +
                                    (s.device.type == Device::gpu ? std::string(": ") + gpu_unavailable_reason()
                                                                  : "."));
      }
      return default_stream(s.device);
    case StreamOrDevice::Kind::none: break;
  }
  return default_stream(default_device());
}

}  // namespace alloy
