// CPU evaluation of reductions and arg reductions. The input is made
// row-contiguous, its dims are merged into alternating kept/reduced groups,
// and one of two loops runs:
//   - last group reduced ("row reduce"): each contiguous run of R elements
//     folds into one accumulator, with 8 independent lanes so the compiler
//     vectorises and rounding error grows slower than a single running sum;
//   - last group kept ("column reduce"): each contiguous run of K elements
//     folds elementwise into K accumulators (a vectorised row update).
#include <algorithm>
#include <memory>
#include <stdexcept>
#include <vector>

#include "backend/common/reduce_groups.h"
#include "backend/common/reduce_ops.h"
#include "backend/cpu/elementwise_loops.h"
#include "backend/cpu/reduce_lanes.h"
#include "core/cast.h"
#include "primitives/reduce.h"

namespace alloy {

namespace {

using Group = ReduceGroup;

// Odometer over groups[0..n): yields the output offset of each position,
// where kept groups advance the output and reduced groups do not.
class OutputWalker {
 public:
  OutputWalker(const std::vector<Group>& groups, size_t n, int64_t inner_out) {
    int64_t stride = inner_out;
    for (size_t i = n; i-- > 0;) {
      sizes_.insert(sizes_.begin(), groups[i].size);
      strides_.insert(strides_.begin(), groups[i].reduced ? 0 : stride);
      if (!groups[i].reduced) stride *= groups[i].size;
    }
    idx_.assign(sizes_.size(), 0);
  }
  int64_t offset() const { return offset_; }
  void next() {
    for (size_t d = sizes_.size(); d-- > 0;) {
      offset_ += strides_[d];
      if (++idx_[d] < sizes_[d]) return;
      offset_ -= strides_[d] * sizes_[d];
      idx_[d] = 0;
    }
  }

 private:
  std::vector<int64_t> sizes_, strides_, idx_;
  int64_t offset_ = 0;
};

template <ReduceOp Op, typename T, typename Acc>
__attribute__((always_inline)) inline Acc reduce_run(const T* p, int64_t n) {
  cpu::ReduceLanes<Op, Acc> lanes;
  lanes.add(p, n);
  return lanes.result();
}

template <ReduceOp Op, typename T>
void reduce_kernel(const array& in_any, array& out, const std::vector<int>& axes) {
  using Out = reduce_out_t<Op, T>;
  using Acc = reduce_acc_t<Op, T>;
  const reduce::Fn<Op> fn;
  const Acc identity = reduce::Fn<Op>::template identity<Acc>();
  cpu::allocate_row_contiguous(out);
  Out* o = out.data<Out>();
  const size_t n_out = out.size();
  if (in_any.size() == 0) {
    for (size_t i = 0; i < n_out; ++i) o[i] = cast_value<Out>(identity);
    return;
  }
  array in = cpu::row_contiguous_copy(in_any);
  const T* x = in.data<T>();
  std::vector<Group> groups = reduce_groups(in.shape(), axes);
  if (groups.empty()) groups.push_back({1, true});  // one element

  if (groups.back().reduced) {
    const int64_t run = groups.back().size;
    const int64_t n_runs = static_cast<int64_t>(in.size()) / run;
    bool outer_reduced = false;
    for (size_t i = 0; i + 1 < groups.size(); ++i) outer_reduced = outer_reduced || groups[i].reduced;
    if (!outer_reduced && n_runs == 1) {  // everything into one value: a partial result per thread
      auto& pool = detail::ThreadPool::global();
      const size_t parts = std::max<size_t>(1, std::min(pool.size(), static_cast<size_t>(run) >> 16));
      const size_t per = (static_cast<size_t>(run) + parts - 1) / parts;
      auto part = cpu::filled<Acc>(parts, identity);
      pool.parallel_for(parts, [&](size_t p) {
        size_t b = p * per, e = std::min(static_cast<size_t>(run), b + per);
        if (b < e)
          cpu::each_index(p, p + 1, [&](size_t) { part[p] = reduce_run<Op, T, Acc>(x + b, static_cast<int64_t>(e - b)); });
      });
      Acc total = identity;
      for (size_t p = 0; p < parts; ++p) total = fn(total, part[p]);
      o[0] = cast_value<Out>(total);
      return;
    }
    if (!outer_reduced) {  // each run is one output element
      cpu::parallel_chunks(
          static_cast<size_t>(n_runs),
          [&](size_t b, size_t e) {
            cpu::each_index(b, e, [&](size_t r) { o[r] = cast_value<Out>(reduce_run<Op, T, Acc>(x + r * run, run)); });
          },
          std::max<size_t>(1, (size_t(1) << 15) / static_cast<size_t>(run)));
      return;
    }
    auto acc = cpu::filled<Acc>(n_out, identity);
    OutputWalker walk(groups, groups.size() - 1, 1);
    for (int64_t r = 0; r < n_runs; ++r, walk.next()) {
      Acc& a = acc[walk.offset()];
      a = fn(a, reduce_run<Op, T, Acc>(x + r * run, run));
    }
    for (size_t i = 0; i < n_out; ++i) o[i] = cast_value<Out>(acc[i]);
    return;
  }

  const int64_t run = groups.back().size;
  const int64_t n_runs = static_cast<int64_t>(in.size()) / run;
  auto acc = cpu::filled<Acc>(n_out, identity);
  // Threads split the columns [0, run): each walks all rows for its slice.
  cpu::parallel_chunks(
      static_cast<size_t>(run),
      [&](size_t j0, size_t j1) {
        OutputWalker walk(groups, groups.size() - 1, run);
        for (int64_t r = 0; r < n_runs; ++r, walk.next()) {
          Acc* a = acc.get() + walk.offset();
          const T* row = x + r * run;
          cpu::each_index(j0, j1, [&](size_t j) { a[j] = fn(a[j], cast_value<Acc>(row[j])); });
        }
      },
      std::max<size_t>(64, (size_t(1) << 15) / static_cast<size_t>(std::max<int64_t>(n_runs, 1))));
  for (size_t i = 0; i < n_out; ++i) o[i] = cast_value<Out>(acc[i]);
}

// [outer, n, inner] view of a row-contiguous shape around `axis`.
struct AxisSplit {
  int64_t outer = 1, n = 1, inner = 1;
};
AxisSplit split_at(const Shape& shape, int axis) {
  AxisSplit s;
  for (int d = 0; d < static_cast<int>(shape.size()); ++d) {
    if (d < axis) s.outer *= shape[d];
    else if (d == axis) s.n = shape[d];
    else s.inner *= shape[d];
  }
  return s;
}

template <ArgReduceOp Op, typename T>
void arg_reduce_kernel(const array& in_any, array& out, int axis) {
  using C = math::compute_t<T>;
  const reduce::ArgBetter<Op> better;
  cpu::allocate_row_contiguous(out);
  uint32_t* o = out.data<uint32_t>();
  if (out.size() == 0) return;
  array in = cpu::row_contiguous_copy(in_any);
  const T* x = in.data<T>();
  AxisSplit s = split_at(in.shape(), axis);
  if (s.inner == 1) {
    for (int64_t r = 0; r < s.outer; ++r) {
      const T* row = x + r * s.n;
      C best = C(row[0]);
      uint32_t idx = 0;
      for (int64_t i = 1; i < s.n; ++i) {
        C v = C(row[i]);
        if (better(v, best)) {
          best = v;
          idx = static_cast<uint32_t>(i);
        }
      }
      o[r] = idx;
    }
    return;
  }
  auto best = cpu::filled<C>(s.inner, C());
  for (int64_t r = 0; r < s.outer; ++r) {
    const T* block = x + r * s.n * s.inner;
    uint32_t* oi = o + r * s.inner;
    for (int64_t j = 0; j < s.inner; ++j) {
      best[j] = C(block[j]);
      oi[j] = 0;
    }
    for (int64_t i = 1; i < s.n; ++i) {
      const T* row = block + i * s.inner;
      for (int64_t j = 0; j < s.inner; ++j) {
        C v = C(row[j]);
        if (better(v, best[j])) {
          best[j] = v;
          oi[j] = static_cast<uint32_t>(i);
        }
      }
    }
  }
}

// Sum of squared deviations from the mean of n values (stride apart), in
// double, two passes: the values are in cache for the second.
template <typename T>
double squared_deviations(const T* p, int64_t n, int64_t stride, double* mean_out) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += cast_value<double>(p[i * stride]);
  const double mean = n ? sum / static_cast<double>(n) : 0.0;
  double m2 = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = cast_value<double>(p[i * stride]) - mean;
    m2 += d * d;
  }
  *mean_out = mean;
  return m2;
}

// Rows of [rows, n] (a long row in parallel parts, merged as Chan et al.).
template <typename T>
void variance_rows(const T* x, T* o, int64_t rows, int64_t n, double divisor) {
  auto& pool = detail::ThreadPool::global();
  if (rows == 1 && n >= (int64_t(1) << 16)) {
    const size_t parts = std::min<size_t>(pool.size(), static_cast<size_t>(n) >> 15);
    const int64_t per = (n + static_cast<int64_t>(parts) - 1) / static_cast<int64_t>(parts);
    std::vector<double> count(parts, 0), mean(parts, 0), m2(parts, 0);
    pool.parallel_for(parts, [&](size_t p) {
      const int64_t b = static_cast<int64_t>(p) * per, e = std::min(n, b + per);
      if (b >= e) return;
      count[p] = static_cast<double>(e - b);
      m2[p] = squared_deviations(x + b, e - b, 1, &mean[p]);
    });
    double c = 0, mu = 0, q = 0;
    for (size_t p = 0; p < parts; ++p) {
      if (count[p] == 0) continue;
      const double total = c + count[p], delta = mean[p] - mu;
      mu += delta * count[p] / total;
      q += m2[p] + delta * delta * c * count[p] / total;
      c = total;
    }
    o[0] = cast_value<T>(q / divisor);
    return;
  }
  cpu::parallel_chunks(
      static_cast<size_t>(rows),
      [&](size_t b, size_t e) {
        for (size_t r = b; r < e; ++r) {
          double mean = 0;
          o[r] = cast_value<T>(squared_deviations(x + r * n, n, 1, &mean) / divisor);
        }
      },
      std::max<size_t>(1, (size_t(1) << 15) / static_cast<size_t>(std::max<int64_t>(n, 1))));
}

// Columns of [n, cols]: threads split the columns; each pass walks the rows.
template <typename T>
void variance_columns(const T* x, T* o, int64_t n, int64_t cols, double divisor) {
  cpu::parallel_chunks(
      static_cast<size_t>(cols),
      [&](size_t j0, size_t j1) {
        std::vector<double> mean(j1 - j0, 0), m2(j1 - j0, 0);
        for (int64_t r = 0; r < n; ++r) {
          const T* row = x + r * cols;
          for (size_t j = j0; j < j1; ++j) mean[j - j0] += cast_value<double>(row[j]);
        }
        for (auto& m : mean) m /= static_cast<double>(n);
        for (int64_t r = 0; r < n; ++r) {
          const T* row = x + r * cols;
          for (size_t j = j0; j < j1; ++j) {
            const double d = cast_value<double>(row[j]) - mean[j - j0];
            m2[j - j0] += d * d;
          }
        }
        for (size_t j = j0; j < j1; ++j) o[j] = cast_value<T>(m2[j - j0] / divisor);
      },
      std::max<size_t>(64, (size_t(1) << 15) / static_cast<size_t>(std::max<int64_t>(n, 1))));
}

}  // namespace

void Variance::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  array in = cpu::row_contiguous_copy(inputs[0]);
  array& out = outputs[0];
  cpu::allocate_row_contiguous(out);
  if (out.size() == 0) return;
  const int64_t rows = in.shape(0), cols = in.shape(1);
  const double d = divisor(in);
  dispatch_dtype(in.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (math::is_half_v<T> || std::is_floating_point_v<T>) {
      if (axis() == 1) variance_rows<T>(in.data<T>(), out.data<T>(), rows, cols, d);
      else variance_columns<T>(in.data<T>(), out.data<T>(), rows, cols, d);
    } else {
      throw std::invalid_argument(std::string("[var] not defined for dtype ") + dtype_name(in.dtype()) + ".");
    }
  });
}

void Reduce::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& in = inputs[0];
  dispatch_reduce_op(op_, [&](auto op_c) {
    constexpr ReduceOp Op = decltype(op_c)::value;
    dispatch_dtype(in.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (reduce_legal<Op, T>) {
        reduce_kernel<Op, T>(in, outputs[0], axes_);
      } else {
        throw std::invalid_argument(std::string("[") + name() + "] not defined for dtype " +
                                    dtype_name(in.dtype()) + ".");
      }
    });
  });
}

void ArgReduce::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& in = inputs[0];
  dispatch_dtype(in.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (op_ == ArgReduceOp::ArgMax) {
      arg_reduce_kernel<ArgReduceOp::ArgMax, T>(in, outputs[0], axis_);
    } else {
      arg_reduce_kernel<ArgReduceOp::ArgMin, T>(in, outputs[0], axis_);
    }
  });
}

}  // namespace alloy
