#include "backend/cuda/kernel_sources.h"

#include "backend/common/binary_ops.h"
#include "backend/common/unary_ops.h"
#include "backend/cuda/elementwise.h"
#include "backend/cuda/kernels.h"

namespace alloy::cuda {

namespace {
std::string instantiate(const std::string& header, const std::string& name, const std::string& args) {
  return "#include \"" + header + "\"\nALLOY_KERNEL_" + name + "(" + args + ")\n";
}
}  // namespace

std::string creation_source(Dtype t, const std::string& name) {
  return instantiate("creation.cuh", name, device_type_name(t));
}
std::string reduce_source(const std::string& op, Dtype in, Dtype acc, Dtype out, const std::string& name) {
  return instantiate("reduce.cuh", name,
                     "alloy::ReduceOp::" + op + ", " + device_type_name(in) + ", " + device_type_name(acc) + ", " +
                         device_type_name(out));
}
std::string arg_reduce_source(const std::string& op, Dtype t, const std::string& name) {
  return instantiate("arg_reduce.cuh", name, "alloy::ArgReduceOp::" + op + ", " + device_type_name(t));
}
std::string variance_source(Dtype t, Dtype acc, const std::string& name) {
  return instantiate("variance.cuh", name, std::string(device_type_name(t)) + ", " + device_type_name(acc));
}
std::string row_softmax_source(const std::string& op, Dtype t, const RowSoftmaxPlan& plan, const std::string& name) {
  const char* acc = t == Dtype::float64 ? "double" : "float";
  std::string args = "alloy::RowSoftmaxOp::" + op + ", " + device_type_name(t) + ", " + acc;
  if (plan.form == RowSoftmaxForm::Registers) args += ", " + std::to_string(plan.group) + ", " + std::to_string(plan.k);
  return instantiate("softmax.cuh", name, args);
}
std::string scan_source(const std::string& op, Dtype t, const std::string& name) {
  return instantiate("scan.cuh", name, "alloy::ScanOp::" + op + ", " + device_type_name(t));
}
std::string gather_source(const std::string& type, Dtype index, const std::string& name) {
  return instantiate("indexing.cuh", name, type + ", " + device_type_name(index));
}
std::string gather_source(Dtype t, Dtype index, const std::string& name) {
  return gather_source(device_type_name(t), index, name);
}
std::string scatter_source(int mode, Dtype t, Dtype index, const std::string& name) {
  return instantiate("indexing.cuh", name,
                     std::to_string(mode) + ", " + device_type_name(t) + ", " + device_type_name(index));
}
std::string fill_bits_source() {
  return R"(
extern "C" __global__ void alloy_fill_bits(unsigned long long data, unsigned long long n, unsigned long long bits,
                                           unsigned width) {
  const unsigned long long step = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
    switch (width) {
      case 1: ((unsigned char*)data)[i] = (unsigned char)bits; break;
      case 2: ((unsigned short*)data)[i] = (unsigned short)bits; break;
      case 4: ((unsigned int*)data)[i] = (unsigned int)bits; break;
      default: ((unsigned long long*)data)[i] = bits; break;
    }
  }
}
)";
}
std::string random_source(const std::string& name) { return instantiate("random.cuh", name, ""); }
std::string gemm_source(Dtype t, const std::string& name) { return instantiate("gemm.cuh", name, device_type_name(t)); }
std::string sort_source(Dtype t, const std::string& name) { return instantiate("sort.cuh", name, device_type_name(t)); }

std::vector<CatalogEntry> kernel_catalog() {
  std::vector<CatalogEntry> out;
  auto add = [&](const std::string& family, const std::string& name, std::string source) {
    out.push_back({family + "/" + name, name, std::move(source)});
  };
  const Dtype all[] = {Dtype::bool_,   Dtype::uint8,   Dtype::uint16,  Dtype::uint32,   Dtype::uint64,
                       Dtype::int8,    Dtype::int16,   Dtype::int32,   Dtype::int64,    Dtype::float16,
                       Dtype::bfloat16, Dtype::float32, Dtype::float64, Dtype::complex64};
  // Conversions: every dtype to and from float32, the bit copies, every form.
  for (Dtype d : all) {
    MapModule to = cast_module(d, Dtype::float32), from = cast_module(Dtype::float32, d);
    add(to.key, "map_v", to.source("map_v"));
    if (d != Dtype::float32) add(from.key, "map_v", from.source("map_v"));
  }
  add("cast/complex64/float16", "map_v", cast_module(Dtype::complex64, Dtype::float16).source("map_v"));
  add("cast/bfloat16/int64", "map_v", cast_module(Dtype::bfloat16, Dtype::int64).source("map_v"));
  for (const char* k : {"map_s1", "map_s2", "map_s3", "map_sn"}) {
    add("cast/float16/float32", k, cast_module(Dtype::float16, Dtype::float32).source(k));
  }
  // Unary: every op on float32 (its own dtype when float32 is illegal), and
  // on complex64 and float16 where legal.
  for (int i = 0; i < static_cast<int>(sizeof(kUnaryOps) / sizeof(kUnaryOps[0])); ++i) {
    const UnaryOpInfo& info = kUnaryOps[i];
    auto out_of = [&](Dtype d) {
      if (info.result == UnaryResult::Bool) return Dtype::bool_;
      if (info.result == UnaryResult::RealPart && d == Dtype::complex64) return Dtype::float32;
      return d;
    };
    bool first = true;
    for (Dtype d : {Dtype::float32, Dtype::complex64, Dtype::float16, Dtype::int32, Dtype::bool_}) {
      if (!(info.kinds & math::kind_bit(d))) continue;
      if (!first && d != Dtype::complex64 && d != Dtype::float16) continue;
      MapModule m = unary_module(info.name, d, out_of(d));
      add(m.key, "map_v", m.source("map_v"));
      first = false;
    }
  }
  // Binary: every op on its first legal dtype; complex arithmetic; every form.
  for (int i = 0; i < static_cast<int>(sizeof(kBinaryOps) / sizeof(kBinaryOps[0])); ++i) {
    const BinaryOpInfo& info = kBinaryOps[i];
    for (Dtype d : {Dtype::float32, Dtype::int32, Dtype::bool_}) {
      if (!(info.kinds & math::kind_bit(d))) continue;
      Dtype o = info.result == BinaryResult::Bool ? Dtype::bool_ : d;
      add(std::string("zip/") + info.name + "/" + dtype_name(d), "zip_vv", zip_module_source(d, o, info.name, "zip_vv"));
      break;
    }
  }
  for (const char* op : {"Add", "Multiply", "Divide", "Power", "Equal"}) {
    Dtype o = std::string(op) == "Equal" ? Dtype::bool_ : Dtype::complex64;
    add(std::string("zip/") + op + "/complex64", "zip_vv", zip_module_source(Dtype::complex64, o, op, "zip_vv"));
  }
  add("zip/Add/float16", "zip_vv", zip_module_source(Dtype::float16, Dtype::float16, "Add", "zip_vv"));
  add("zip/Maximum/bfloat16", "zip_vv", zip_module_source(Dtype::bfloat16, Dtype::bfloat16, "Maximum", "zip_vv"));
  for (const char* k : {"zip_sv", "zip_vs", "zip_s1", "zip_s2", "zip_s3", "zip_sn"}) {
    add("zip/Add/float32", k, zip_module_source(Dtype::float32, Dtype::float32, "Add", k));
  }
  // Select over every element width and form.
  for (Dtype b : {Dtype::uint8, Dtype::uint16, Dtype::uint32, Dtype::uint64}) {
    add(std::string("select/") + dtype_name(b), "select_v", select_module_source(b, "select_v"));
  }
  for (const char* k : {"select_s1", "select_s2", "select_s3", "select_sn"}) {
    add("select/uint32", k, select_module_source(Dtype::uint32, k));
  }
  for (Dtype d : {Dtype::float32, Dtype::float16, Dtype::bfloat16, Dtype::int64, Dtype::complex64, Dtype::bool_}) {
    for (const char* k : {"arange", "linspace", "eye"}) {
      add(std::string("creation/") + dtype_name(d), k, creation_source(d, k));
    }
  }
  // Reductions: (op, in, acc, out) as Reduce::eval_gpu derives them.
  struct R {
    const char* op;
    Dtype in, acc, out;
  };
  const R reductions[] = {
      {"Sum", Dtype::float32, Dtype::float32, Dtype::float32},   {"Sum", Dtype::float16, Dtype::float32, Dtype::float16},
      {"Sum", Dtype::int8, Dtype::uint32, Dtype::int32},         {"Sum", Dtype::bool_, Dtype::uint32, Dtype::int32},
      {"Sum", Dtype::complex64, Dtype::complex64, Dtype::complex64},
      {"Prod", Dtype::int64, Dtype::uint64, Dtype::int64},       {"Max", Dtype::bfloat16, Dtype::float32, Dtype::bfloat16},
      {"Min", Dtype::uint8, Dtype::uint8, Dtype::uint8},         {"And", Dtype::float32, Dtype::bool_, Dtype::bool_},
      {"Or", Dtype::bool_, Dtype::bool_, Dtype::bool_},          {"Max", Dtype::float64, Dtype::float64, Dtype::float64}};
  for (const R& r : reductions) {
    for (const char* k : {"row_block", "row_warp", "col"}) {
      add(std::string("reduce/") + r.op + "/" + dtype_name(r.in), k, reduce_source(r.op, r.in, r.acc, r.out, k));
    }
  }
  // Variance (variance.cuh) of every float dtype, in its accumulator.
  for (Dtype d : {Dtype::float32, Dtype::float16, Dtype::bfloat16, Dtype::float64}) {
    const Dtype acc = d == Dtype::float64 ? Dtype::float64 : Dtype::float32;
    for (const char* k : {"var_rows_block", "var_rows_warp", "var_cols", "var_merge"}) {
      add(std::string("variance/") + dtype_name(d), k, variance_source(d, acc, k));
    }
  }
  for (const char* op : {"ArgMax", "ArgMin"}) {
    for (Dtype d : {Dtype::float32, Dtype::float16, Dtype::int64}) {
      for (const char* k : {"arg_row", "arg_col", "arg_merge"}) {
        add(std::string("arg_reduce/") + op + "/" + dtype_name(d), k, arg_reduce_source(op, d, k));
      }
    }
  }
  // Every form of the row softmax on float32, and one form of each other dtype.
  for (const char* op : {"Softmax", "LogSumExp"}) {
    for (const RowSoftmaxPlan& plan : row_softmax_forms(std::string(op) == "LogSumExp", 4)) {
      for (const std::string& k : row_softmax_kernels(plan)) {
        add(std::string("softmax/") + op + "/float32/" + plan.variant(), k, row_softmax_source(op, Dtype::float32, plan, k));
      }
    }
  }
  for (Dtype d : {Dtype::float16, Dtype::bfloat16, Dtype::float64}) {
    const RowSoftmaxPlan plan = row_softmax_plan(false, 1, 100, 1);
    add(std::string("softmax/Softmax/") + dtype_name(d) + "/" + plan.variant(), "softmax_rows",
        row_softmax_source("Softmax", d, plan, "softmax_rows"));
  }
  for (const char* op : {"Sum", "Prod", "Max", "Min", "LogAddExp"}) {
    for (const char* k : {"scan_row", "scan_col"}) add(std::string("scan/") + op, k, scan_source(op, Dtype::float32, k));
  }
  add("scan/Sum/int32", "scan_row", scan_source("Sum", Dtype::int32, "scan_row"));
  add("scan/Prod/float16", "scan_row", scan_source("Prod", Dtype::float16, "scan_row"));
  add("scan/LogAddExp/bfloat16", "scan_row", scan_source("LogAddExp", Dtype::bfloat16, "scan_row"));
  add("scan/Sum/complex64", "scan_row", scan_source("Sum", Dtype::complex64, "scan_row"));
  for (auto [t, i] : {std::pair{Dtype::uint32, Dtype::int32}, std::pair{Dtype::uint16, Dtype::int64},
                      std::pair{Dtype::uint64, Dtype::uint8}}) {
    add(std::string("gather/") + dtype_name(t) + "/" + dtype_name(i), "gather", gather_source(t, i, "gather"));
  }
  add("gather/bits128/int32", "gather", gather_source("alloy::bits128", Dtype::int32, "gather"));
  struct S {
    int mode;
    Dtype t;
  };
  const S scatters[] = {{0, Dtype::uint32},  {1, Dtype::float32}, {1, Dtype::float16}, {1, Dtype::bfloat16},
                        {1, Dtype::int8},    {1, Dtype::int64},   {1, Dtype::complex64}, {1, Dtype::bool_},
                        {2, Dtype::float32}, {3, Dtype::int16},   {4, Dtype::float64}, {3, Dtype::float16}};
  for (const S& s : scatters) {
    add("scatter/" + std::to_string(s.mode) + "/" + dtype_name(s.t), "scatter",
        scatter_source(s.mode, s.t, Dtype::int32, "scatter"));
  }
  add("random", "random_bits", random_source("random_bits"));
  for (Dtype d : {Dtype::int32, Dtype::bool_, Dtype::int8, Dtype::float16, Dtype::complex64, Dtype::uint64}) {
    add(std::string("gemm/") + dtype_name(d), "gemm_naive", gemm_source(d, "gemm_naive"));
  }
  // Sort: the comparison differs by kind (NaN-aware floats, 16-bit floats
  // compared as float, complex, integers, bool) and the tile by element size.
  for (Dtype d : {Dtype::float32, Dtype::float16, Dtype::bfloat16, Dtype::float64, Dtype::complex64, Dtype::bool_,
                  Dtype::uint8, Dtype::int64}) {
    for (const char* k : {"sort_tile", "sort_merge"}) add(std::string("sort/") + dtype_name(d), k, sort_source(d, k));
  }
  return out;
}

}  // namespace alloy::cuda
