// MetalKernelPrimitive on MLX's CPU backend: the kernel's C++ translation
// runs as one task of MLX's CPU stream, over Alloy's thread pool.
#include <stdexcept>
#include <string>

#include "backend/cpu/custom_kernel.h"
#include "dtypes.h"
#include "mlx/allocator.h"
#include "mlx/backend/cpu/encoder.h"
#include "primitive.h"

namespace alloy::mlx {

void MetalKernelPrimitive::eval_cpu(const std::vector<mxc::array>& inputs, std::vector<mxc::array>& outputs) {
  // Compiled here, on the thread that called eval, so a compile error is
  // raised by that eval rather than inside MLX's stream thread.
  cpu::compile_custom_kernel(*launch_.variant);
  auto& encoder = mxc::cpu::get_command_encoder(stream());
  for (auto& in : inputs) encoder.set_input_array(in);
  for (auto& out : outputs) {
    // With canary bytes after a small output (cpu::output_tail_bytes).
    out.set_data(mxc::allocator::malloc(out.nbytes() + cpu::output_tail_bytes(out.nbytes(), *launch_.variant)));
    cpu::fill_output_tail({out.data<void>(), out.size(), out.nbytes()}, *launch_.variant);
    encoder.set_output_array(out);
  }
  // The task holds views of the arrays (MLX keeps their buffers alive until
  // the task has run), not the graph around them.
  std::vector<mxc::array> ins, outs;
  ins.reserve(inputs.size());
  outs.reserve(outputs.size());
  for (auto& in : inputs) ins.push_back(mxc::array::unsafe_weak_copy(in));
  for (auto& out : outputs) outs.push_back(mxc::array::unsafe_weak_copy(out));
  encoder.dispatch([launch = launch_, ins = std::move(ins), outs = std::move(outs)]() mutable {
    if (launch.init_value) {
      for (auto& out : outs) cpu::fill_elements(out.data<void>(), out.size(), to_alloy(out.dtype()), *launch.init_value);
    }
    cpu::OperandTables tables(ins.size(), outs.size());
    for (size_t i = 0; i < ins.size(); ++i) {
      const mxc::array& in = ins[i];
      // data_size(): the elements the buffer holds, a bounds-checked kernel's limit.
      tables.set_input(i, const_cast<void*>(in.data<void>()), in.shape().data(), in.strides().data(),
                       static_cast<int>(in.ndim()), in.data_size());
    }
    for (size_t i = 0; i < outs.size(); ++i) tables.set_output(i, outs[i].data<void>(), outs[i].data_size());
    cpu::run_custom_kernel(*launch.variant, tables.view(), launch.grid, launch.threadgroup, launch.timeout);
    std::vector<cpu::OutputBuffer> written;
    for (auto& out : outs) written.push_back({out.data<void>(), out.size(), out.nbytes()});
    cpu::check_output_tails(written, *launch.variant);
  });
}

}  // namespace alloy::mlx
