// Every Python module of Alloy that can start the GPU registers this: at the
// start of Python's shutdown, while every library is intact, it waits for
// the libraries still loading in the background (backend/cuda/device.cpp's
// cuBLAS thread). Without it, a process that exits soon after its first GPU
// op can be torn down under that thread (alloy.mlx on mlx-cuda: SIGSEGV
// after a script's last line, H100).
#pragma once

#include <nanobind/nanobind.h>

#include "alloy/device.h"

namespace alloy::py {

inline void join_background_loads_at_exit() {
  nanobind::module_::import_("atexit").attr("register")(nanobind::cpp_function([] {
    nanobind::gil_scoped_release release;
    alloy::gpu_finish_background_loads();
  }));
}

}  // namespace alloy::py
