// Devices and streams. A stream is an ordered queue of work on one device.
#pragma once

#include <string>

namespace alloy {

struct Device {
  enum class DeviceType { cpu, gpu };
  static constexpr DeviceType cpu = DeviceType::cpu;
  static constexpr DeviceType gpu = DeviceType::gpu;

  DeviceType type = DeviceType::cpu;
  int index = 0;

  constexpr Device() = default;
  constexpr Device(DeviceType t, int i = 0) : type(t), index(i) {}
  bool operator==(const Device&) const = default;
};

std::string to_string(const Device& d);

struct Stream {
  int index = 0;
  Device device;
  Stream() = default;
  Stream(int i, Device d) : index(i), device(d) {}
  bool operator==(const Stream&) const = default;
};

// Whether a device of this type can run work here (the GPU needs a driver).
bool is_available(const Device& d);

// Waits for what the GPU backend loads in the background after the first
// GPU op (cuBLAS and its handle, backend/cuda/device.cpp).
// Alloy's Python modules call it at the start of Python's shutdown; a C++
// program that may return from main within a few hundred milliseconds of
// its first GPU op calls it first, so that exit's teardown of the
// libraries does not run under that thread (a static's destructor joins it
// too, but later than some libraries' teardown).
void gpu_finish_background_loads();

const Device& default_device();
void set_default_device(const Device& d);

Stream default_stream(Device d);
void set_default_stream(Stream s);
Stream new_stream(Device d);

// What an op runs on: an explicit stream, a device (its default stream), or
// the default device's default stream.
struct StreamOrDevice {
  enum class Kind { none, stream, device } kind = Kind::none;
  Stream stream;
  Device device;
  StreamOrDevice() = default;
  StreamOrDevice(Stream s) : kind(Kind::stream), stream(s) {}
  StreamOrDevice(Device d) : kind(Kind::device), device(d) {}
  StreamOrDevice(Device::DeviceType t) : kind(Kind::device), device(t) {}
};
Stream to_stream(StreamOrDevice s);

// Waits until the work queued on `s` (default: the default device's default
// stream) is done. eval already waits for what it computes; this is for work
// made visible some other way and for code written against MLX.
void synchronize(StreamOrDevice s = {});

}  // namespace alloy
