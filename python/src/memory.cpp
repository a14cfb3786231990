#include "alloy/allocator.h"
#include "bindings.h"

void init_memory(nb::module_& m) {
  m.def("get_active_memory", &alloy::get_active_memory, "Bytes held by live arrays.");
  m.def("get_peak_memory", &alloy::get_peak_memory, "Largest active memory since the last reset.");
  m.def("reset_peak_memory", &alloy::reset_peak_memory);
  m.def("get_cache_memory", &alloy::get_cache_memory, "Bytes the GPU allocator keeps cached for reuse.");
  m.def("clear_cache", &alloy::clear_cache, "Frees the GPU allocator's cache.");
}
