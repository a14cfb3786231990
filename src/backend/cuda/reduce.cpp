// GPU evaluation of Reduce, ArgReduce and Scan (device/reduce.cuh,
// arg_reduce.cuh, scan.cuh). Inputs are made row-contiguous first, as on the
// CPU, so the kernels only see merged kept/reduced groups.
#include <algorithm>
#include <stdexcept>

#include "backend/common/reduce_groups.h"
#include "backend/cuda/elementwise.h"
#include "backend/cuda/kernel_sources.h"
#include "backend/cuda/kernels.h"
#include "backend/cuda/reduce.h"
#include "primitives/reduce.h"
#include "primitives/scan.h"

namespace alloy {

using namespace cuda;

namespace {

using Group = ReduceGroup;

// A one-operand layout over the groups selected by `pick`.
template <typename Pick>
StridedLayout<1> groups_layout(const std::vector<Group>& groups, size_t end, Pick pick, int64_t* count) {
  StridedLayout<1> L{};
  *count = 1;
  for (size_t i = 0; i < end; ++i) {
    if (!pick(groups[i])) continue;
    if (L.ndim == kMaxDims) throw std::invalid_argument("[reduce] too many alternating reduced/kept axes.");
    L.shape[L.ndim] = static_cast<int32_t>(groups[i].size);
    L.strides[0][L.ndim] = groups[i].stride;
    ++L.ndim;
    *count *= groups[i].size;
  }
  if (L.ndim == 0) {
    L.ndim = 1;
    L.shape[0] = 1;
  }
  return L;
}

CUfunction reduce_kernel(const std::string& op, Dtype in, Dtype acc, Dtype out, const std::string& name) {
  return kernel("reduce/" + op + "/" + dtype_name(in) + "/" + dtype_name(acc) + "/" + dtype_name(out), name,
                [=](const std::string& k) { return reduce_source(op, in, acc, out, k); });
}

}  // namespace

namespace cuda {

void run_reduce(const std::string& op, const Shape& shape, const ReduceSource& source, array& out, Dtype acc_t,
                const std::vector<int>& axes, CUstream s, std::vector<array>& keep_alive) {
  const Dtype out_t = out.dtype();
  const int64_t n_out = static_cast<int64_t>(out.size());
  const size_t size = shape_size(shape);
  std::vector<Group> groups = size == 0 ? std::vector<Group>{} : reduce_groups(shape, axes);
  if (size != 0 && groups.empty()) groups.push_back({1, true, 1});
  const bool row = size == 0 || groups.back().reduced;
  // A row pass's kernel and its first argument (the source's, or partials).
  auto launch_row = [&](CUfunction fn, const unsigned (&grid)[3], const void* first, void* dst, RowReduceArgs& a) {
    void* params[] = {const_cast<void*>(first), &dst, &a, nullptr};
    const unsigned block[3] = {256, 1, 1};
    cuda_driver::launch(fn, grid, block, 0, s, params);
  };
  if (row) {
    RowReduceArgs a{};
    a.n_rows = n_out;
    a.run = size == 0 ? 0 : groups.back().size;
    const size_t end = groups.empty() ? 0 : groups.size() - 1;
    int64_t n_kept = 1;
    a.kept = groups_layout(groups, end, [](const Group& g) { return !g.reduced; }, &n_kept);
    a.outer = groups_layout(groups, end, [](const Group& g) { return g.reduced; }, &a.n_outer);
    if (size == 0) a.n_outer = 0;
    // Few long rows: split each over several blocks, then reduce the partials.
    int64_t splits = 1;
    if (a.n_outer == 1 && n_out < 2 * sm_count() && a.run >= 8192) {
      splits = std::min<int64_t>((a.run + 4095) / 4096, (4 * sm_count() + n_out - 1) / std::max<int64_t>(n_out, 1));
      splits = std::max<int64_t>(std::min<int64_t>(splits, 65535), 1);
    }
    // A multiple of 16 elements: every split starts on a whole chunk (reduce.cuh).
    a.split_len = splits == 1 ? a.run : ((a.run + splits - 1) / splits + 15) / 16 * 16;
    const bool warp = a.run * a.n_outer <= 512;
    const std::string name = warp ? "row_warp" : "row_block";
    auto blocks_for = [&](int64_t rows) {
      int64_t b = warp ? (rows + 7) / 8 : rows;
      return static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>(b, int64_t(sm_count()) * 64)));
    };
    if (splits == 1) {
      launch_row(source.row_kernel(name, out_t), {blocks_for(n_out), 1, 1}, source.param, out.raw_data(), a);
      return;
    }
    array partial = scratch(static_cast<size_t>(n_out * splits), acc_t);
    keep_alive.push_back(partial);
    launch_row(source.row_kernel(name, acc_t), {blocks_for(n_out), static_cast<unsigned>(splits), 1}, source.param,
               partial.raw_data(), a);
    RowReduceArgs b{};
    b.n_rows = n_out;
    b.run = splits;
    b.n_outer = 1;
    b.split_len = splits;
    b.kept.ndim = 1;
    b.kept.shape[0] = static_cast<int32_t>(n_out);
    b.kept.strides[0][0] = splits;
    b.outer.ndim = 1;
    b.outer.shape[0] = 1;
    const std::string name2 = splits <= 512 ? "row_warp" : "row_block";
    const void* psrc = partial.raw_data();
    void* dst = out.raw_data();
    unsigned blocks2 = static_cast<unsigned>(
        std::max<int64_t>(1, std::min<int64_t>(name2 == "row_warp" ? (n_out + 7) / 8 : n_out, sm_count() * 64)));
    launch3(reduce_kernel(op, acc_t, acc_t, out_t, name2), {blocks2, 1, 1}, {256, 1, 1}, 0, s, psrc, dst, b);
    return;
  }
  if (!source.data) throw std::logic_error("[reduce] a column reduction needs its input in memory");
  const Dtype in_t = source.dtype;
  ColReduceArgs a{};
  a.inner = groups.back().size;
  const size_t end = groups.size() - 1;
  a.kept = groups_layout(groups, end, [](const Group& g) { return !g.reduced; }, &a.n_outer);
  a.red = groups_layout(groups, end, [](const Group& g) { return g.reduced; }, &a.n_red);
  const int64_t col_blocks = (a.inner + 31) / 32;
  int64_t splits = 1;
  if (col_blocks * a.n_outer < 2 * sm_count() && a.n_red >= 1024) {
    splits = std::min<int64_t>((a.n_red + 255) / 256, (4 * sm_count()) / std::max<int64_t>(col_blocks * a.n_outer, 1));
    splits = std::max<int64_t>(std::min<int64_t>(splits, 65535), 1);
  }
  a.split_len = (a.n_red + splits - 1) / splits;
  const unsigned gy = static_cast<unsigned>(std::min<int64_t>(a.n_outer, 65535));
  const void* src = source.data;
  if (splits == 1) {
    void* dst = out.raw_data();
    launch3(reduce_kernel(op, in_t, acc_t, out_t, "col"), {static_cast<unsigned>(col_blocks), gy, 1}, {32, 8, 1}, 0, s,
            src, dst, a);
    return;
  }
  array partial = scratch(static_cast<size_t>(n_out * splits), acc_t);
  keep_alive.push_back(partial);
  void* pdst = partial.raw_data();
  launch3(reduce_kernel(op, in_t, acc_t, acc_t, "col"),
          {static_cast<unsigned>(col_blocks), gy, static_cast<unsigned>(splits)}, {32, 8, 1}, 0, s, src, pdst, a);
  // The partials are [splits, n_out]: a column reduction over the first axis.
  ColReduceArgs b{};
  b.inner = n_out;
  b.n_outer = 1;
  b.n_red = splits;
  b.split_len = splits;
  b.kept.ndim = 1;
  b.kept.shape[0] = 1;
  b.red.ndim = 1;
  b.red.shape[0] = static_cast<int32_t>(splits);
  b.red.strides[0][0] = n_out;
  const void* psrc = partial.raw_data();
  void* dst = out.raw_data();
  launch3(reduce_kernel(op, acc_t, acc_t, out_t, "col"), {static_cast<unsigned>((n_out + 31) / 32), 1, 1},
          {32, 8, 1}, 0, s, psrc, dst, b);
}

}  // namespace

namespace cuda {

Dtype reduce_acc_dtype(ReduceOp op, Dtype in, const char* op_name) {
  Dtype acc_t = Dtype::float32;
  dispatch_reduce_op(op, [&](auto op_c) {
    constexpr ReduceOp Op = decltype(op_c)::value;
    dispatch_dtype(in, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (reduce_legal<Op, T>) {
        acc_t = dtype_of<reduce_acc_t<Op, T>>;
      } else {
        throw std::invalid_argument(std::string("[") + op_name + "] not defined for dtype " + dtype_name(in) + ".");
      }
    });
  });
  return acc_t;
}

}  // namespace cuda

void Reduce::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& in_any = inputs[0];
  array& out = outputs[0];
  const Dtype acc_t = reduce_acc_dtype(op_, in_any.dtype(), name());
  allocate_row_contiguous(out);
  if (out.size() == 0) return;
  CUstream s = stream_for(stream());
  array in = row_contiguous(in_any, s, name());
  std::vector<array> keep_alive;
  const std::string op = reduce_info(op_).name;
  ReduceSource source;
  source.dtype = in.dtype();
  source.data = in.raw_data();
  source.param = &source.data;
  source.row_kernel = [&](const std::string& kernel_name, Dtype out_t) {
    return reduce_kernel(op, in.dtype(), acc_t, out_t, kernel_name);
  };
  run_reduce(op, in.shape(), source, out, acc_t, axes_, s, keep_alive);
  note_pending(stream());
}

void ArgReduce::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& in_any = inputs[0];
  array& out = outputs[0];
  allocate_row_contiguous(out);
  if (out.size() == 0) return;
  CUstream s = stream_for(stream());
  array in = row_contiguous(in_any, s, name());
  int64_t outer = 1, n = in.shape(axis_), inner = 1;
  for (int d = 0; d < axis_; ++d) outer *= in.shape(d);
  for (int d = axis_ + 1; d < in.ndim(); ++d) inner *= in.shape(d);
  const std::string op = op_ == ArgReduceOp::ArgMax ? "ArgMax" : "ArgMin";
  const Dtype t = in.dtype();
  SourceFn source = [=](const std::string& k) { return arg_reduce_source(op, t, k); };
  const std::string key = "arg_reduce/" + op + "/" + dtype_name(t);
  const int64_t n_out = outer * inner;
  // Few outputs over a long axis: the axis is split over gridDim.z, each
  // split's best (value, index) kept, and arg_merge combines them.
  const int64_t parallel = inner == 1 ? outer : (inner + 31) / 32 * outer;
  int64_t splits = 1;
  // (Rows split until eight blocks per SM run; along a leading axis a split
  // paid only below two: measured on an H200, docs/benchmarks.md.) A long
  // enough axis splits further, into parts of at least 64 K elements up to
  // 32 blocks per SM: with a single wave of blocks, the SMs that finish first
  // idle while the last ones run (argmax over all of 1 GiB: 80-82% of copy
  // bandwidth on an H100, 89-91% in four waves).
  const int64_t fill = int64_t(inner == 1 ? 8 : 2) * sm_count();
  if (parallel < fill && n >= 4096) {
    splits = std::min<int64_t>(n / 2048, fill / std::max<int64_t>(parallel, 1));
    if (inner == 1) splits = std::max(splits, std::min<int64_t>(n / 65536, 4 * fill / std::max<int64_t>(parallel, 1)));
    splits = std::max<int64_t>(std::min<int64_t>(splits, 65535), 1);
  }
  int64_t split_len = (n + splits - 1) / splits;
  splits = (n + split_len - 1) / split_len;  // none empty
  // The compute type's partial values (float for 16-bit floats).
  const Dtype part_t = (t == Dtype::float16 || t == Dtype::bfloat16) ? Dtype::float32 : t;
  std::vector<array> keep_alive;
  struct {
    void* out;
    void* part_val;
    void* part_idx;
  } dst{out.raw_data(), nullptr, nullptr};
  if (splits > 1) {
    keep_alive.push_back(scratch(static_cast<size_t>(n_out * splits), part_t));
    keep_alive.push_back(scratch(static_cast<size_t>(n_out * splits), Dtype::uint32));
    dst.part_val = keep_alive[0].raw_data();
    dst.part_idx = keep_alive[1].raw_data();
  }
  const void* src = in.raw_data();
  const unsigned z = static_cast<unsigned>(splits);
  if (inner == 1) {
    const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(outer, int64_t(sm_count()) * 64));
    launch3(kernel(key, "arg_row", source), {blocks, 1, z}, {256, 1, 1}, 0, s, src, dst, outer, n, split_len);
  } else {
    const unsigned gy = static_cast<unsigned>(std::min<int64_t>(outer, 65535));
    launch3(kernel(key, "arg_col", source), {static_cast<unsigned>((inner + 31) / 32), gy, z}, {32, 8, 1}, 0, s, src,
            dst, outer, n, inner, split_len);
  }
  if (splits > 1) {
    const void* pv = dst.part_val;
    const void* pi = dst.part_idx;
    void* o = out.raw_data();
    const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(n_out, int64_t(sm_count()) * 64));
    launch(kernel(key, "arg_merge", source), blocks, 256, 0, s, pv, pi, o, n_out, splits);
  }
  note_pending(stream());
}

void Variance::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& in_any = inputs[0];
  array& out = outputs[0];
  const Dtype t = in_any.dtype();
  if (!is_floating(t)) throw std::invalid_argument(std::string("[var] not defined for dtype ") + dtype_name(t) + ".");
  allocate_row_contiguous(out);
  if (out.size() == 0) return;
  CUstream s = stream_for(stream());
  array in = row_contiguous(in_any, s, "var");
  const Dtype acc_t = t == Dtype::float64 ? Dtype::float64 : Dtype::float32;
  const std::string key = std::string("variance/") + dtype_name(t);
  SourceFn source = [=](const std::string& k) { return variance_source(t, acc_t, k); };
  int64_t rows = in.shape(0), cols = in.shape(1);
  const bool columns = axis() == 0;
  const int64_t n = columns ? rows : cols, outputs_n = columns ? cols : rows;
  // Few outputs over a long axis: the axis is split until about four blocks
  // per SM run, and var_merge combines the splits' moments.
  const int64_t parallel = columns ? (cols + 31) / 32 : rows;
  int64_t splits = 1;
  if (parallel < 2 * sm_count() && n >= (columns ? 1024 : 8192)) {
    splits = std::min<int64_t>((n + (columns ? 255 : 4095)) / (columns ? 256 : 4096),
                               (4 * sm_count() + parallel - 1) / parallel);
    splits = std::max<int64_t>(std::min<int64_t>(splits, 65535), 1);
  }
  // Row splits start on whole 16-byte chunks (a multiple of 16 elements).
  int64_t split_len = (n + splits - 1) / splits;
  if (!columns && splits > 1) split_len = (split_len + 15) / 16 * 16;
  splits = std::max<int64_t>(1, (n + split_len - 1) / split_len);
  std::vector<array> keep_alive;
  if (splits > 1) keep_alive.push_back(scratch(static_cast<size_t>(3 * outputs_n * splits), acc_t));
  const void* src = in.raw_data();
  void* dst = out.raw_data();
  void* part = splits > 1 ? keep_alive[0].raw_data() : nullptr;
  const unsigned max_blocks = static_cast<unsigned>(sm_count()) * 64;
  auto go = [&](auto divisor) {
    const unsigned y = static_cast<unsigned>(splits);
    if (columns) {
      launch3(kernel(key, "var_cols", source), {static_cast<unsigned>((cols + 31) / 32), y, 1}, {32, 8, 1}, 0, s, src,
              dst, part, rows, cols, split_len, divisor);
    } else if (splits == 1 && n <= 512) {
      const unsigned blocks = static_cast<unsigned>(std::min<int64_t>((rows + 7) / 8, max_blocks));
      launch3(kernel(key, "var_rows_warp", source), {blocks, 1, 1}, {256, 1, 1}, 0, s, src, dst, part, rows, cols,
              split_len, divisor);
    } else {
      const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(rows, max_blocks));
      launch3(kernel(key, "var_rows_block", source), {blocks, y, 1}, {256, 1, 1}, 0, s, src, dst, part, rows, cols,
              split_len, divisor);
    }
    if (splits > 1) {
      const void* partial = part;
      int32_t column_layout = columns ? 1 : 0;
      const unsigned blocks = static_cast<unsigned>(std::min<int64_t>((outputs_n + 7) / 8, max_blocks));
      launch3(kernel(key, "var_merge", source), {blocks, 1, 1}, {256, 1, 1}, 0, s, partial, dst, outputs_n, splits,
              column_layout, divisor);
    }
  };
  if (acc_t == Dtype::float64) go(divisor(in));
  else go(static_cast<float>(divisor(in)));
  note_pending(stream());
}

void Scan::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& in_any = inputs[0];
  array& out = outputs[0];
  dispatch_scan_op(op_, [&](auto op_c) {
    constexpr ScanOp Op = decltype(op_c)::value;
    dispatch_dtype(in_any.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (!scan_legal<Op, T>) {
        throw std::invalid_argument(std::string("[") + name() + "] not defined for dtype " +
                                    dtype_name(in_any.dtype()) + ".");
      }
    });
  });
  allocate_row_contiguous(out);
  if (out.size() == 0) return;
  CUstream s = stream_for(stream());
  array in = row_contiguous(in_any, s, name());
  int64_t outer = 1, n = in.shape(axis_), inner = 1;
  for (int d = 0; d < axis_; ++d) outer *= in.shape(d);
  for (int d = axis_ + 1; d < in.ndim(); ++d) inner *= in.shape(d);
  static const char* const kOps[] = {"Sum", "Prod", "Max", "Min", "LogAddExp"};
  const std::string op = kOps[static_cast<int>(op_)];
  const Dtype t = in.dtype();
  SourceFn source = [=](const std::string& k) { return scan_source(op, t, k); };
  const std::string key = "scan/" + op + "/" + dtype_name(t);
  const void* src = in.raw_data();
  void* dst = out.raw_data();
  bool reverse = reverse_, inclusive = inclusive_;
  if (inner == 1) {
    unsigned blocks = static_cast<unsigned>(std::min<int64_t>(outer, int64_t(sm_count()) * 64));
    launch(kernel(key, "scan_row", source), blocks, 256, 0, s, src, dst, outer, n, reverse, inclusive);
  } else {
    int64_t cols = outer * inner;
    launch(kernel(key, "scan_col", source), grid_blocks(cols), kBlock, 0, s, src, dst, cols, n, inner, reverse,
           inclusive);
  }
  note_pending(stream());
}

}  // namespace alloy
