// MetalKernelPrimitive on MLX's CPU backend: the kernel's C++ translation
// runs as one task of MLX's CPU stream, over Alloy's thread pool.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>

#include "backend/cpu/custom_kernel.h"
#include "dtypes.h"
#include "jit/cpu_interrupt.h"
#include "mlx/allocator.h"
#include "mlx/backend/common/utils.h"
#include "mlx/backend/cpu/encoder.h"
#include "primitive.h"

namespace alloy::mlx {
namespace {

// Metal's buffers start on pages, and kernels that read one as float4
// (`*(const device float4*)(x + i)`) rely on more than an element's alignment;
// MLX's CPU allocator puts its data 8 bytes past a size header. For a kernel
// whose casts assume more than 8 (Analysis::assumed_buffer_alignment), outputs
// start at an aligned offset of a slightly larger buffer, and misaligned
// inputs are copied to aligned memory for the launch (x86's aligned vector
// moves fault otherwise).
constexpr size_t kBufferAlignment = 64;

bool aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % kBufferAlignment == 0; }

// An output's buffer, with `tail` canary bytes after it, starting aligned when `align`.
void allocate_output(mxc::array& out, size_t tail, bool align) {
  if (!align) {
    out.set_data(mxc::allocator::malloc(out.nbytes() + tail));
    return;
  }
  mxc::allocator::Data data = mxc::allocator::malloc(out.nbytes() + tail + kBufferAlignment);
  const auto base = reinterpret_cast<uintptr_t>(data.buffer().raw_ptr());
  const size_t shift = (kBufferAlignment - base % kBufferAlignment) % kBufferAlignment;
  mxc::Strides strides(out.ndim(), 1);
  for (int d = static_cast<int>(out.ndim()) - 2; d >= 0; --d) strides[d] = strides[d + 1] * out.shape(d + 1);
  // The flags MLX would give these strides (its own helper).
  const auto [data_size, row_contiguous, col_contiguous] = mxc::check_contiguity(out.shape(), strides);
  mxc::array::Flags flags;
  flags.contiguous = data_size == out.size();
  flags.row_contiguous = row_contiguous;
  flags.col_contiguous = col_contiguous;
  out.set_data(std::move(data), out.size(), std::move(strides), flags, static_cast<int64_t>(shift));
  if (!aligned(out.data<void>()))
    throw std::logic_error("[metal_kernel] alloy.mlx could not align an output buffer (MLX's offsets changed?)");
}

}  // namespace

void MetalKernelPrimitive::eval_cpu(const std::vector<mxc::array>& inputs, std::vector<mxc::array>& outputs) {
  // A signal from here on (while the kernel compiles, or while its task
  // waits in MLX's queue) stops the launch, as one during it would
  // (jit/cpu_interrupt.h); the task continues this window on its thread.
  jit::InterruptWindow window;
  // Compiled here, on the thread that called eval, so a compile error is
  // raised by that eval rather than inside MLX's stream thread.
  cpu::compile_custom_kernel(*launch_.variant);
  auto& encoder = mxc::cpu::get_command_encoder(stream());
  for (auto& in : inputs) encoder.set_input_array(in);
  const bool align = launch_.variant->translated.analysis.assumed_buffer_alignment > 8;
  for (auto& out : outputs) {
    // With canary bytes after a small output (cpu::output_tail_bytes), written in the task.
    allocate_output(out, cpu::output_tail_bytes(out.nbytes(), *launch_.variant), align);
    encoder.set_output_array(out);
  }
  // The task holds views of the arrays (MLX keeps their buffers alive until
  // the task has run), not the graph around them.
  std::vector<mxc::array> ins, outs;
  ins.reserve(inputs.size());
  outs.reserve(outputs.size());
  for (auto& in : inputs) ins.push_back(mxc::array::unsafe_weak_copy(in));
  for (auto& out : outputs) outs.push_back(mxc::array::unsafe_weak_copy(out));
  encoder.dispatch([launch = launch_, ins = std::move(ins), outs = std::move(outs), align,
                    opened = window.mark()]() mutable {
    jit::InterruptWindow continued(opened);
    // What the outputs hold before a launch (and again before a rerun).
    auto set_up_outputs = [&] {
      for (auto& out : outs) {
        cpu::fill_output_tail({out.data<void>(), out.size(), out.nbytes()}, *launch.variant);
        if (launch.init_value)
          cpu::fill_elements(out.data<void>(), out.size(), to_alloy(out.dtype()), *launch.init_value);
      }
    };
    set_up_outputs();
    cpu::OperandTables tables(ins.size(), outs.size());
    std::vector<std::unique_ptr<void, decltype(&std::free)>> copies;
    for (size_t i = 0; i < ins.size(); ++i) {
      const mxc::array& in = ins[i];
      void* data = const_cast<void*>(in.data<void>());
      const size_t bytes = in.data_size() * in.itemsize();
      if (align && bytes > 0 && !aligned(data)) {
        const size_t rounded = (bytes + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
        void* copy = std::aligned_alloc(kBufferAlignment, rounded);
        if (!copy) throw std::bad_alloc();
        std::memcpy(copy, data, bytes);
        copies.emplace_back(copy, &std::free);
        data = copy;
      }
      // data_size(): the elements the buffer holds, a bounds-checked kernel's limit.
      tables.set_input(i, data, in.shape().data(), in.strides().data(), static_cast<int>(in.ndim()), in.data_size());
    }
    for (size_t i = 0; i < outs.size(); ++i) tables.set_output(i, outs[i].data<void>(), outs[i].data_size());
    cpu::run_custom_kernel(*launch.variant, tables.view(), launch.grid, launch.threadgroup, launch.timeout,
                           std::ref(set_up_outputs));
    std::vector<cpu::OutputBuffer> written;
    for (auto& out : outs) written.push_back({out.data<void>(), out.size(), out.nbytes()});
    cpu::check_output_tails(written, *launch.variant);
  });
}

}  // namespace alloy::mlx
