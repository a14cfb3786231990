// Lets bindings take `stream=None | Stream | Device | DeviceType` directly.
#pragma once

#include <nanobind/nanobind.h>

#include "alloy/device.h"

namespace nanobind::detail {
template <>
struct type_caster<alloy::StreamOrDevice> {
  NB_TYPE_CASTER(alloy::StreamOrDevice, const_name("Stream | Device | None"))
  bool from_python(handle src, uint8_t flags, cleanup_list* cleanup) noexcept {
    if (src.is_none()) {
      value = alloy::StreamOrDevice();
      return true;
    }
    try {
      if (isinstance<alloy::Stream>(src)) {
        value = alloy::StreamOrDevice(cast<alloy::Stream>(src));
        return true;
      }
      if (isinstance<alloy::Device>(src)) {
        value = alloy::StreamOrDevice(cast<alloy::Device>(src));
        return true;
      }
      if (isinstance<alloy::Device::DeviceType>(src)) {
        value = alloy::StreamOrDevice(alloy::Device(cast<alloy::Device::DeviceType>(src)));
        return true;
      }
    } catch (...) {
    }
    return false;
  }
  static handle from_cpp(const alloy::StreamOrDevice&, rv_policy, cleanup_list*) noexcept { return none().release(); }
};
}  // namespace nanobind::detail
