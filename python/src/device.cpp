// mx.cpu / mx.gpu, Device, Stream and the defaults.
#include <nanobind/stl/string.h>

#include "alloy/device.h"
#include "bindings.h"
#include "stream_or_device.h"

using namespace alloy;

void init_device(nb::module_& m) {
  auto dt = nb::enum_<Device::DeviceType>(m, "DeviceType");
  dt.value("cpu", Device::cpu).value("gpu", Device::gpu);
  nb::class_<Device>(m, "Device", "A device to run work on.")
      .def(nb::init<Device::DeviceType, int>(), nb::arg("type"), nb::arg("index") = 0)
      .def_ro("type", &Device::type)
      .def_ro("index", &Device::index)
      .def("__repr__", [](const Device& d) { return to_string(d); })
      .def("__eq__", [](const Device& a, const nb::object& b) {
        if (nb::isinstance<Device>(b)) return a == nb::cast<Device>(b);
        if (nb::isinstance<Device::DeviceType>(b)) return a.type == nb::cast<Device::DeviceType>(b);
        return false;
      });
  nb::implicitly_convertible<Device::DeviceType, Device>();
  nb::class_<Stream>(m, "Stream", "An ordered queue of work on one device.")
      .def_ro("device", &Stream::device)
      .def_ro("index", &Stream::index)
      .def("__repr__", [](const Stream& s) {
        return "Stream(" + to_string(s.device) + ", " + std::to_string(s.index) + ")";
      })
      .def("__eq__", [](const Stream& a, const Stream& b) { return a == b; });
  m.attr("cpu") = Device::cpu;
  m.attr("gpu") = Device::gpu;
  m.def("default_device", &default_device);
  m.def("set_default_device", [](const Device& d) { set_default_device(d); }, nb::arg("device"));
  m.def("default_stream", &default_stream, nb::arg("device"));
  m.def("set_default_stream", &set_default_stream, nb::arg("stream"));
  m.def("new_stream", &new_stream, nb::arg("device"));
  m.def("synchronize", [](StreamOrDevice s) {
    nb::gil_scoped_release release;
    synchronize(s);
  }, nb::arg("stream") = nb::none(), "Waits for the work queued on the stream (default: the default device's).");
  m.def("is_available", [](const Device& d) { return is_available(d); }, nb::arg("device"));
}
