// CPU evaluation of the creation primitives.
#include "backend/cpu/strided.h"
#include "core/cast.h"
#include "primitives/creation.h"

namespace alloy {

void Arange::eval_cpu(const std::vector<array>&, std::vector<array>& outputs) {
  array& out = outputs[0];
  cpu::allocate_row_contiguous(out);
  dispatch_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* dst = out.data<T>();
    for (size_t i = 0, n = out.size(); i < n; ++i) dst[i] = cast_value<T>(start_ + static_cast<double>(i) * step_);
  });
}

void Linspace::eval_cpu(const std::vector<array>&, std::vector<array>& outputs) {
  array& out = outputs[0];
  cpu::allocate_row_contiguous(out);
  const size_t n = out.size();
  const double step = n > 1 ? (stop_ - start_) / static_cast<double>(n - 1) : 0.0;
  dispatch_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* dst = out.data<T>();
    for (size_t i = 0; i < n; ++i) dst[i] = cast_value<T>(start_ + static_cast<double>(i) * step);
    if (n > 1) dst[n - 1] = cast_value<T>(stop_);
  });
}

void Eye::eval_cpu(const std::vector<array>&, std::vector<array>& outputs) {
  array& out = outputs[0];
  cpu::allocate_row_contiguous(out);
  const int64_t rows = out.shape(0), cols = out.shape(1);
  dispatch_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* dst = out.data<T>();
    for (int64_t i = 0; i < rows * cols; ++i) dst[i] = cast_value<T>(0);
    for (int64_t r = 0; r < rows; ++r) {
      int64_t c = r + k_;
      if (c >= 0 && c < cols) dst[r * cols + c] = cast_value<T>(1);
    }
  });
}

}  // namespace alloy
