// CPU evaluation of Softmax and LogSumExp over the last axis: rows split over
// the pool's threads; each row is read for its max, then its exponentials are
// summed (and, for softmax, kept in the output or a float row) and scaled.
// The same arithmetic as the GPU kernels (backend/cuda/device/softmax.cuh):
// float32 (float64 for float64; the sum of exponentials in float64, where
// the GPU's tree of partial sums keeps float32 accurate), one rounding at the end, the max folded with
// the Reduce kernels' rule (NaN wins), logsumexp shifted by 0 where the max
// is infinite.
#include <cmath>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "backend/common/reduce_ops.h"
#include "backend/cpu/elementwise_loops.h"
#include "core/cast.h"
#include "primitives/softmax.h"

namespace alloy {

namespace {

template <bool LogSumExpOut, typename T>
void softmax_rows(const array& in_any, array& out, const char* op) {
  using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
  cpu::allocate_row_contiguous(out);
  if (out.size() == 0) return;
  array in = cpu::row_contiguous_copy(in_any);
  const int64_t n = in.shape().back();
  const int64_t rows = static_cast<int64_t>(in.size()) / n;
  const T* x = in.data<T>();
  T* y = out.data<T>();
  const reduce::Fn<ReduceOp::Max> max_fn;
  cpu::parallel_chunks(
      static_cast<size_t>(rows),
      [&](size_t r0, size_t r1) {
        std::vector<Acc> e(static_cast<size_t>(n));
        // (each_index: the rows' loops also for AVX2 + F16C, float16 reads
        // and writes converted in one instruction each.)
        cpu::each_index(r0, r1, [&](size_t r) {
          const T* xr = x + r * n;
          Acc m = reduce::Fn<ReduceOp::Max>::template identity<Acc>();
          for (int64_t j = 0; j < n; ++j) m = max_fn(m, cast_value<Acc>(xr[j]));
          const Acc shift = LogSumExpOut && std::isinf(m) ? Acc(0) : m;
          double sum = 0;
          for (int64_t j = 0; j < n; ++j) sum += (e[j] = std::exp(cast_value<Acc>(xr[j]) - shift));
          const Acc s = static_cast<Acc>(sum);
          if constexpr (LogSumExpOut) {
            y[r] = cast_value<T>(std::log(s) + shift);
          } else {
            const Acc inv = Acc(1) / s;
            T* yr = y + r * n;
            for (int64_t j = 0; j < n; ++j) yr[j] = cast_value<T>(e[j] * inv);
          }
        });
      },
      std::max<size_t>(1, (size_t(1) << 14) / static_cast<size_t>(n)));
}

template <bool LogSumExpOut>
void eval_rows(const array& in, array& out, const char* op) {
  if (!is_floating(in.dtype())) {
    throw std::invalid_argument(std::string("[") + op + "] needs a real floating-point input, got " +
                                dtype_name(in.dtype()) + ".");
  }
  dispatch_dtype(in.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_integral_v<T> && !math::is_complex_v<T>) softmax_rows<LogSumExpOut, T>(in, out, op);
  });
}

}  // namespace

void Softmax::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  eval_rows<false>(inputs[0], outputs[0], name());
}

void LogSumExp::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  eval_rows<true>(inputs[0], outputs[0], name());
}

}  // namespace alloy
