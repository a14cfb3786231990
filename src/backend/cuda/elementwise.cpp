// Launch logic of the elementwise families, and the GPU evals of AsType,
// Unary, Binary and Select. Output layouts follow the CPU backend: a dense
// input keeps its (possibly transposed) layout, anything else becomes
// row-contiguous.
#include "backend/cuda/elementwise.h"
#include "backend/cuda/fault.h"

#include <atomic>
#include <stdexcept>

#include "alloy/allocator.h"
#include "primitives/binary.h"
#include "primitives/layout.h"
#include "primitives/shape.h"
#include "primitives/ternary.h"
#include "primitives/unary.h"

namespace alloy::cuda {

namespace {

int vec_width(size_t a, size_t b) {
  size_t w = a > b ? a : b;
  return w >= 16 ? 1 : static_cast<int>(16 / w);
}

}  // namespace

std::string map_module_source(Dtype in, Dtype out, const std::string& includes, const std::string& body,
                              const std::string& name) {
  return "#include \"elementwise.cuh\"\n" + includes + "using In = " + device_type_name(in) +
         ";\nusing Out = " + device_type_name(out) + ";\n" + body + "ALLOY_KERNEL_" + name + "(F, In, Out)\n";
}

std::string zip_module_source(Dtype t, Dtype out, const std::string& op_name, const std::string& name) {
  return std::string("#include \"elementwise.cuh\"\n#include \"backend/common/binary_ops.h\"\nusing T = ") +
         device_type_name(t) + ";\nusing Out = " + device_type_name(out) +
         ";\nstruct F {\n  __device__ Out operator()(T a, T b) const {\n"
         "    using C = alloy::math::compute_t<T>;\n"
         "    return alloy::cast_value<Out>(alloy::binary::Fn<alloy::BinaryOp::" +
         op_name + ">{}(C(a), C(b)));\n  }\n};\nALLOY_KERNEL_" + name + "(F, T, Out)\n";
}

std::string select_module_source(Dtype bits, const std::string& name) {
  return std::string("#include \"elementwise.cuh\"\nALLOY_KERNEL_") + name + "(" + device_type_name(bits) + ")\n";
}

MapModule unary_module(const std::string& op_name, Dtype in, Dtype out) {
  return {"map/unary/" + op_name + "/" + dtype_name(in) + "/" + dtype_name(out), [=](const std::string& name) {
            return map_module_source(
                in, out, "#include \"backend/common/unary_ops.h\"\n",
                "struct F {\n  __device__ Out operator()(In x) const {\n"
                "    return alloy::cast_value<Out>(alloy::unary::Fn<alloy::UnaryOp::" +
                    op_name + ">{}(alloy::math::compute_t<In>(x)));\n  }\n};\n",
                name);
          }};
}

MapModule cast_module(Dtype in, Dtype out) {
  if (in == out) in = out = bits_dtype(in);
  std::string key = std::string("map/cast/") + dtype_name(in) + "/" + dtype_name(out);
  return {key, [in, out](const std::string& name) {
            return map_module_source(in, out, "", "using F = alloy::CastFn<In, Out>;\n", name);
          }};
}

void run_map_dense(const MapModule& m, const void* src, void* dst, int64_t n, size_t in_itemsize,
                   size_t out_itemsize, CUstream stream) {
  if (n == 0) return;
  const int V = vec_width(in_itemsize, out_itemsize);
  if (aligned(src, V * in_itemsize) && aligned(dst, V * out_itemsize)) {
    CUfunction fn = kernel(m.key, "map_v", m.source);
    launch(fn, grid_blocks(n / V + 1), kBlock, 0, stream, src, dst, n);
    return;
  }
  // Misaligned views: the 1-d strided kernel with unit strides.
  StridedLayout<2> L{};
  L.ndim = 1;
  L.shape[0] = static_cast<int32_t>(n);
  L.strides[0][0] = L.strides[1][0] = 1;
  CUfunction fn = kernel(m.key, n < (int64_t(1) << 31) ? "map_s1" : "map_sn", m.source);
  launch(fn, grid_blocks(n), kBlock, 0, stream, src, dst, L, n);
}

void run_map(const MapModule& m, const array& in, void* dst, const Strides& dst_strides, size_t out_itemsize,
             CUstream stream, const char* op) {
  const int64_t n = static_cast<int64_t>(in.size());
  if (n == 0) return;
  if (is_dense(in) && in.strides() == dst_strides) {
    run_map_dense(m, in.raw_data(), dst, static_cast<int64_t>(in.data_size()), in.itemsize(), out_itemsize, stream);
    return;
  }
  StridedLayout<2> L = make_layout<2>(in.shape(), {&in.strides(), &dst_strides}, op);
  size_t dst_span = 0;
  view_flags(in.shape(), dst_strides, &dst_span);
  CUfunction fn = kernel(m.key, "map_" + strided_suffix(L, {in.data_size(), dst_span}), m.source);
  const void* src = in.raw_data();
  launch(fn, grid_blocks(n), kBlock, 0, stream, src, dst, L, n);
}

void copy_into(const array& src, void* dst, Dtype dst_dtype, const Strides& dst_strides, CUstream stream,
               const char* op) {
  run_map(cast_module(src.dtype(), dst_dtype), src, dst, dst_strides, size_of(dst_dtype), stream, op);
}

array row_contiguous(const array& a, CUstream stream, const char* op) {
  if (a.flags().row_contiguous) return a;
  return copy_row_contiguous(a, stream, op);
}

array copy_row_contiguous(const array& a, CUstream stream, const char* op) {
  Buffer b = allocator(Device(Device::gpu)).malloc(a.nbytes());
  array out(std::make_shared<Data>(b), a.shape(), row_major_strides(a.shape()), a.dtype());
  copy_into(a, out.raw_data(), a.dtype(), out.strides(), stream, op);
  return out;
}

}  // namespace alloy::cuda

namespace alloy {

using namespace cuda;

void AsType::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& in = inputs[0];
  array& out = outputs[0];
  allocate_row_contiguous(out);
  CUstream s = stream_for(stream());
  if (in.flags().row_contiguous && in.dtype() == out.dtype()) {
    if (out.nbytes()) {
      check(cuda_driver::api().cuMemcpyDtoDAsync(dptr(out.raw_data()), dptr(in.raw_data()), out.nbytes(), s),
            "astype", "cuMemcpyDtoDAsync");
    }
  } else {
    copy_into(in, out.raw_data(), out.dtype(), out.strides(), s, "astype");
  }
  note_pending(stream());
}

void Unary::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& in = inputs[0];
  array& out = outputs[0];
  dispatch_unary_op(op_, [&](auto op_c) {
    constexpr UnaryOp Op = decltype(op_c)::value;
    dispatch_dtype(in.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (!unary_legal<Op, T>) {
        throw std::invalid_argument(std::string("[") + name() + "] not defined for dtype " +
                                    dtype_name(in.dtype()) + ".");
      }
    });
  });
  MapModule m = unary_module(unary_info(op_).name, in.dtype(), out.dtype());
  CUstream s = stream_for(stream());
  if (is_dense(in)) {
    allocate_like(out, in);
    run_map_dense(m, in.raw_data(), out.raw_data(), static_cast<int64_t>(in.data_size()), in.itemsize(),
                  out.itemsize(), s);
  } else {
    allocate_row_contiguous(out);
    run_map(m, in, out.raw_data(), out.strides(), out.itemsize(), s, name());
  }
  note_pending(stream());
}

namespace {

bool is_scalar_like(const array& a) { return a.data_size() == 1; }

// The contiguous binary kernels (vector-vector, scalar-vector,
// vector-scalar) by (op, dtype, output dtype): found once through the module
// cache, then read with one load, so a small op's launch builds no strings.
constexpr int kNumBinaryOps = static_cast<int>(sizeof(kBinaryOps) / sizeof(kBinaryOps[0]));
enum ZipForm { kVV, kSV, kVS, kNumZipForms };
constexpr const char* kZipFormNames[kNumZipForms] = {"zip_vv", "zip_sv", "zip_vs"};

CUfunction contiguous_zip(BinaryOp op, Dtype t, Dtype out_t, ZipForm form) {
  static std::atomic<CUfunction> table[kNumBinaryOps][kNumDtypes][kNumDtypes][kNumZipForms] = {};
  static std::atomic<unsigned> filled_in{0};  // the context generation of the functions
  if (filled_in.load(std::memory_order_acquire) != context_generation()) {
    // A GPU fault destroyed their modules: look each up again (kernel() reloads).
    for (auto& a : table)
      for (auto& b : a)
        for (auto& c : b)
          for (auto& f : c) f.store(nullptr, std::memory_order_relaxed);
    filled_in.store(context_generation(), std::memory_order_release);
  }
  std::atomic<CUfunction>& slot =
      table[static_cast<int>(op)][static_cast<int>(t)][static_cast<int>(out_t)][form];
  if (CUfunction fn = slot.load(std::memory_order_acquire)) return fn;
  const std::string op_name = binary_info(op).name;
  CUfunction fn = kernel("zip/" + op_name + "/" + dtype_name(t) + "/" + dtype_name(out_t), kZipFormNames[form],
                         [=](const std::string& k) { return zip_module_source(t, out_t, op_name, k); });
  slot.store(fn, std::memory_order_release);
  return fn;
}

}  // namespace

void Binary::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& a = inputs[0];
  const array& b = inputs[1];
  array& out = outputs[0];
  dispatch_binary_op(op_, [&](auto op_c) {
    constexpr BinaryOp Op = decltype(op_c)::value;
    dispatch_dtype(a.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (!binary_legal<Op, T>) {
        throw std::invalid_argument(std::string("[") + name() + "] not defined for dtype " +
                                    dtype_name(a.dtype()) + ".");
      }
    });
  });
  const Dtype t = a.dtype(), out_t = out.dtype();
  CUstream s = stream_for(stream());
  const size_t ti = a.itemsize(), oi = out.itemsize();
  const int V = vec_width(ti, oi);
  auto vec_ok = [&](const void* p, size_t item) { return aligned(p, V * item); };
  int form = -1;
  const array* like = nullptr;
  if (is_dense(a) && is_dense(b) && a.strides() == b.strides()) {
    form = kVV;
    like = &a;
  } else if (is_scalar_like(a) && is_dense(b)) {
    form = kSV;
    like = &b;
  } else if (is_scalar_like(b) && is_dense(a)) {
    form = kVS;
    like = &a;
  }
  if (form >= 0) {
    allocate_like(out, *like);
    const int64_t n = static_cast<int64_t>(like->data_size());
    if (n > 0 && (vec_ok(a.raw_data(), ti) || form == kSV) && (vec_ok(b.raw_data(), ti) || form == kVS) &&
        vec_ok(out.raw_data(), oi)) {
      CUfunction fn = contiguous_zip(op_, t, out_t, static_cast<ZipForm>(form));
      const void* pa = a.raw_data();
      const void* pb = b.raw_data();
      void* po = out.raw_data();
      launch(fn, grid_blocks(n / V + 1), kBlock, 0, s, pa, pb, po, n);
      note_pending(stream());
      return;
    }
    if (n == 0) return;
    // Misaligned: fall through to the strided kernel over the same layout.
  } else {
    allocate_row_contiguous(out);
  }
  const int64_t n = static_cast<int64_t>(out.size());
  if (n == 0) return;
  const std::string op_name = binary_info(op_).name;
  const std::string key = "zip/" + op_name + "/" + dtype_name(t) + "/" + dtype_name(out_t);
  SourceFn source = [=](const std::string& k) { return zip_module_source(t, out_t, op_name, k); };
  StridedLayout<3> L = make_layout<3>(out.shape(), {&a.strides(), &b.strides(), &out.strides()}, name());
  CUfunction fn = kernel(key, "zip_" + strided_suffix(L, {a.data_size(), b.data_size(), out.data_size()}), source);
  const void* pa = a.raw_data();
  const void* pb = b.raw_data();
  void* po = out.raw_data();
  launch(fn, grid_blocks(n), kBlock, 0, s, pa, pb, po, L, n);
  note_pending(stream());
}

void Select::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& c = inputs[0];
  const array& x = inputs[1];
  const array& y = inputs[2];
  array& out = outputs[0];
  allocate_row_contiguous(out);
  const int64_t n = static_cast<int64_t>(out.size());
  if (n == 0) return;
  const Dtype bits = size_of(x.dtype()) == 1 ? Dtype::uint8
                     : size_of(x.dtype()) == 2 ? Dtype::uint16
                     : size_of(x.dtype()) == 4 ? Dtype::uint32
                                               : Dtype::uint64;
  const std::string key = std::string("select/") + dtype_name(bits);
  SourceFn source = [bits](const std::string& k) { return select_module_source(bits, k); };
  CUstream s = stream_for(stream());
  const size_t item = x.itemsize();
  const int V = vec_width(item, item);
  const void* pc = c.raw_data();
  const void* px = x.raw_data();
  const void* py = y.raw_data();
  void* po = out.raw_data();
  if (c.flags().row_contiguous && x.flags().row_contiguous && y.flags().row_contiguous && aligned(pc, V) &&
      aligned(px, V * item) && aligned(py, V * item) && aligned(po, V * item)) {
    CUfunction fn = kernel(key, "select_v", source);
    launch(fn, grid_blocks(n / V + 1), kBlock, 0, s, pc, px, py, po, n);
  } else {
    StridedLayout<4> L =
        make_layout<4>(out.shape(), {&c.strides(), &x.strides(), &y.strides(), &out.strides()}, "where");
    CUfunction fn =
        kernel(key, "select_" + strided_suffix(L, {c.data_size(), x.data_size(), y.data_size(), out.size()}), source);
    launch(fn, grid_blocks(n), kBlock, 0, s, pc, px, py, po, L, n);
  }
  note_pending(stream());
}

}  // namespace alloy
