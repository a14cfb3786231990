#include "bindings.h"

#include "alloy/errors.h"
#include "background_loads.h"
#include "core/gpu_availability.h"

NB_MODULE(core, m) {
  // Functions captured by custom_function form reference cycles with their
  // modules that live until exit; nanobind's exit-time report would be noise.
  nb::set_leak_warnings(false);
  m.doc() = "Alloy: MLX-compatible arrays; Metal kernels on NVIDIA GPUs and CPUs.";
  // A kernel stopped at its timeout is Python's TimeoutError.
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const alloy::KernelTimeout& e) {
      PyErr_SetString(PyExc_TimeoutError, e.what());
    } catch (const alloy::KernelInterrupted& e) {
      // The program's own handler for the signal runs now (KeyboardInterrupt,
      // or what an alarm handler raises); if it raises nothing, the stop is
      // still an error: the kernel's outputs are not valid.
      if (PyErr_CheckSignals() == 0) PyErr_SetString(PyExc_RuntimeError, e.what());
    } catch (const alloy::ArgumentTypeError& e) {
      PyErr_SetString(PyExc_TypeError, e.what());
    }
  });
  init_dtypes(m);
  init_device(m);
  init_array(m);
  init_creation(m);
  init_elementwise(m);
  init_reductions(m);
  init_shape(m);
  init_indexing(m);
  init_linalg(m);
  init_ops_shape(m);
  init_conv(m);
  init_random(m);
  init_fast(m);
  init_fast_ops(m);
  init_transforms(m);
  init_memory(m);
  init_msl(m);
  init_runtime(m);
  init_ops_math(m);
  init_io(m);
  init_export(m);
  init_distributed(m);
  init_printing(m);
  init_array_iteration(m);
  init_sort(m);
  init_fft(m);
  init_quant(m);
  init_buffers(m);
  init_linalg_ops(m);  // after init_random: adds to mx.random
  // The parts written in Python (function transforms, stream contexts)
  // attach themselves to this module.
  nb::module_::import_("alloy._core").attr("extend")(m);
  alloy::py::join_background_loads_at_exit();
}
