#include "backend/cuda/aot_kernels.h"

#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>

#include "alloy/ops.h"
#include "backend/common/binary_ops.h"
#include "backend/common/reduce_ops.h"
#include "backend/common/scan_ops.h"
#include "backend/common/unary_ops.h"
#include "backend/cuda/elementwise.h"
#include "backend/cuda/kernels.h"
#include "backend/cuda/softmax.h"
#include "jit/cuda_libraries.h"
#include "jit/digest.h"
#include "jit/embedded_headers.h"

namespace alloy::cuda {

namespace {

const Dtype kAll[] = {Dtype::bool_,   Dtype::uint8,    Dtype::uint16,  Dtype::uint32,  Dtype::uint64,
                      Dtype::int8,    Dtype::int16,    Dtype::int32,   Dtype::int64,   Dtype::float16,
                      Dtype::bfloat16, Dtype::float32, Dtype::float64, Dtype::complex64};
// The dtypes models run on: their strided forms are built too (complex64:
// RoPE through complex numbers, forward and backward).
const Dtype kCommon[] = {Dtype::bool_,   Dtype::uint8,    Dtype::uint32,  Dtype::int32,    Dtype::int64,
                         Dtype::float16, Dtype::bfloat16, Dtype::float32, Dtype::complex64};
// Index dtypes: every integer for gathers and plain scatters; the usual ones
// (arange's int32, numpy's int64, argmax's uint32) for combining scatters.
const Dtype kAnyIndex[] = {Dtype::uint8, Dtype::uint16, Dtype::uint32, Dtype::uint64,
                           Dtype::int8,  Dtype::int16,  Dtype::int32,  Dtype::int64};
const Dtype kIndex[] = {Dtype::int32, Dtype::int64, Dtype::uint32};

bool common(Dtype d) {
  for (Dtype c : kCommon) {
    if (c == d) return true;
  }
  return false;
}

class SetBuilder {
 public:
  void add(const std::string& family, const std::string& name, std::string source) {
    if (seen_.insert(family + "/" + name).second) out_.push_back({family + "/" + name, name, std::move(source)});
  }
  void add(const MapModule& m, const std::string& name) { add(m.key, name, m.source(name)); }
  std::vector<CatalogEntry> take() { return std::move(out_); }

 private:
  std::set<std::string> seen_;
  std::vector<CatalogEntry> out_;
};

// Strided forms: 1-3 dims with 32-bit offsets (broadcasts, transposes), and
// any dims with 64-bit offsets (rarer: built for the common dtypes).
const char* const kMapStrided[] = {"map_s1", "map_s2", "map_s3", "map_sn"};
const char* const kMapStrided32[] = {"map_s1", "map_s2", "map_s3"};
const char* const kZipForms[] = {"zip_vv", "zip_sv", "zip_vs"};
const char* const kZipStrided32[] = {"zip_s1", "zip_s2", "zip_s3"};

void add_elementwise(SetBuilder& set) {
  // Conversions between every pair (and the same-width bit copies), dense;
  // strided (all forms among the common dtypes, 32-bit forms where one side
  // is common), as transposes and broadcasts need.
  for (Dtype in : kAll) {
    for (Dtype out : kAll) {
      MapModule m = cast_module(in, out);
      set.add(m, "map_v");
      if ((common(in) && common(out)) || in == out) {
        for (const char* k : kMapStrided) set.add(m, k);
      } else if (common(in) || common(out)) {
        for (const char* k : kMapStrided32) set.add(m, k);
      }
    }
  }
  for (const UnaryOpInfo& info : kUnaryOps) {
    for (Dtype d : kAll) {
      if (!(info.kinds & math::kind_bit(d))) continue;
      Dtype out = info.result == UnaryResult::Bool                              ? Dtype::bool_
                  : info.result == UnaryResult::RealPart && d == Dtype::complex64 ? Dtype::float32
                                                                                   : d;
      MapModule m = unary_module(info.name, d, out);
      set.add(m, "map_v");
      for (const char* k : kMapStrided32) set.add(m, k);
      if (d == Dtype::float32 || d == Dtype::float16 || d == Dtype::bfloat16 || d == Dtype::complex64) {
        set.add(m, "map_sn");
      }
    }
  }
  for (const BinaryOpInfo& info : kBinaryOps) {
    for (Dtype d : kAll) {
      if (!(info.kinds & math::kind_bit(d))) continue;
      Dtype out = info.result == BinaryResult::Bool ? Dtype::bool_ : d;
      const std::string key = std::string("zip/") + info.name + "/" + dtype_name(d) + "/" + dtype_name(out);
      for (const char* k : kZipForms) set.add(key, k, zip_module_source(d, out, info.name, k));
      for (const char* k : kZipStrided32) set.add(key, k, zip_module_source(d, out, info.name, k));
      if (common(d)) set.add(key, "zip_sn", zip_module_source(d, out, info.name, "zip_sn"));
    }
  }
  for (Dtype bits : {Dtype::uint8, Dtype::uint16, Dtype::uint32, Dtype::uint64}) {
    for (const char* k : {"select_v", "select_s1", "select_s2", "select_s3", "select_sn"}) {
      set.add(std::string("select/") + dtype_name(bits), k, select_module_source(bits, k));
    }
  }
}

void add_reductions(SetBuilder& set) {
  auto add_reduce = [&](const char* op, Dtype in, Dtype acc, Dtype out) {
    const std::string key =
        std::string("reduce/") + op + "/" + dtype_name(in) + "/" + dtype_name(acc) + "/" + dtype_name(out);
    for (const char* k : {"row_block", "row_warp", "col"}) set.add(key, k, reduce_source(op, in, acc, out, k));
  };
  for (const ReduceOpInfo& info : kReduceOps) {
    const ReduceOp op = static_cast<ReduceOp>(&info - kReduceOps);
    for (Dtype d : kAll) {
      dispatch_reduce_op(op, [&](auto op_c) {
        constexpr ReduceOp Op = decltype(op_c)::value;
        dispatch_dtype(d, [&](auto tag) {
          using T = typename decltype(tag)::type;
          if constexpr (reduce_legal<Op, T>) {
            const Dtype acc = dtype_of<reduce_acc_t<Op, T>>, out = dtype_of<reduce_out_t<Op, T>>;
            // One pass, and the two passes of a split reduction.
            add_reduce(info.name, d, acc, out);
            add_reduce(info.name, d, acc, acc);
            add_reduce(info.name, acc, acc, out);
          }
        });
      });
    }
  }
  // Variance (variance.cuh) of every float dtype, in its accumulator.
  for (Dtype d : {Dtype::float32, Dtype::float16, Dtype::bfloat16, Dtype::float64}) {
    const Dtype acc = d == Dtype::float64 ? Dtype::float64 : Dtype::float32;
    for (const char* k : {"var_rows_block", "var_rows_warp", "var_cols", "var_merge"}) {
      set.add(std::string("variance/") + dtype_name(d), k, variance_source(d, acc, k));
    }
  }
  for (const char* op : {"ArgMax", "ArgMin"}) {
    for (Dtype d : kAll) {
      for (const char* k : {"arg_row", "arg_col", "arg_merge"}) {
        set.add(std::string("arg_reduce/") + op + "/" + dtype_name(d), k, arg_reduce_source(op, d, k));
      }
    }
  }
  // Every row softmax form the launch plan (backend/cuda/softmax.h) picks.
  for (const char* op : {"Softmax", "LogSumExp"}) {
    for (Dtype d : {Dtype::float16, Dtype::bfloat16, Dtype::float32, Dtype::float64}) {
      for (const RowSoftmaxPlan& plan : row_softmax_forms(std::string(op) == "LogSumExp", static_cast<int>(size_of(d)))) {
        const std::string key = std::string("softmax/") + op + "/" + dtype_name(d) + "/" + plan.variant();
        for (const std::string& k : row_softmax_kernels(plan)) set.add(key, k, row_softmax_source(op, d, plan, k));
      }
    }
  }
  static const char* const kScanNames[] = {"Sum", "Prod", "Max", "Min", "LogAddExp"};
  for (int i = 0; i < 5; ++i) {
    for (Dtype d : kAll) {
      dispatch_dtype(d, [&](auto tag) {
        using T = typename decltype(tag)::type;
        bool legal = false;
        switch (static_cast<ScanOp>(i)) {
          case ScanOp::Sum: legal = scan_legal<ScanOp::Sum, T>; break;
          case ScanOp::Prod: legal = scan_legal<ScanOp::Prod, T>; break;
          case ScanOp::Max: legal = scan_legal<ScanOp::Max, T>; break;
          case ScanOp::Min: legal = scan_legal<ScanOp::Min, T>; break;
          case ScanOp::LogAddExp: legal = scan_legal<ScanOp::LogAddExp, T>; break;
        }
        if (!legal) return;
        for (const char* k : {"scan_row", "scan_col"}) {
          set.add(std::string("scan/") + kScanNames[i] + "/" + dtype_name(d), k, scan_source(kScanNames[i], d, k));
        }
      });
    }
  }
}

void add_others(SetBuilder& set) {
  for (Dtype d : kAll) {
    for (const char* k : {"arange", "linspace", "eye"}) {
      set.add(std::string("creation/") + dtype_name(d), k, creation_source(d, k));
    }
    for (const char* k : {"sort_tile", "sort_merge"}) set.add(std::string("sort/") + dtype_name(d), k, sort_source(d, k));
    set.add(std::string("gemm/") + dtype_name(d), "gemm_naive", gemm_source(d, "gemm_naive"));
  }
  for (Dtype i : kAnyIndex) {
    for (Dtype bits : {Dtype::uint8, Dtype::uint16, Dtype::uint32, Dtype::uint64}) {
      const std::string type = device_type_name(bits);
      set.add("gather/" + type + "/" + dtype_name(i), "gather", gather_source(type, i, "gather"));
      set.add("scatter/0/" + std::string(dtype_name(bits)) + "/" + dtype_name(i), "scatter",
              scatter_source(0, bits, i, "scatter"));
    }
    set.add(std::string("gather/alloy::bits128/") + dtype_name(i), "gather", gather_source("alloy::bits128", i, "gather"));
  }
  for (Dtype i : kIndex) {
    for (int mode = 1; mode <= 4; ++mode) {
      for (Dtype d : kAll) {
        if (d == Dtype::complex64 && mode >= 3) continue;
        set.add("scatter/" + std::to_string(mode) + "/" + dtype_name(d) + "/" + dtype_name(i), "scatter",
                scatter_source(mode, d, i, "scatter"));
      }
    }
  }
  set.add("random", "random_bits", random_source("random_bits"));
  set.add("custom_kernel/fill", "alloy_fill_bits", fill_bits_source());
}

}  // namespace

std::vector<CatalogEntry> aot_kernel_set() {
  SetBuilder set;
  add_elementwise(set);
  add_reductions(set);
  add_others(set);
  return set.take();
}

std::string aot_fingerprint(const jit::NvrtcOptions& opts) {
  jit::KeyBuilder k;
  k.add("headers", embedded_headers_digest());
  k.add("math", opts.math_mode);
  k.add("lineinfo", opts.line_info ? "1" : "0");
  for (const std::string& o : opts.extra_options) k.add("option", o);
  for (const auto& [name, text] : opts.extra_headers) k.add(name, text);
  return k.hex();
}

namespace {

struct Loaded {
  std::unique_ptr<jit::AotArchive> archive;
  std::string status;
  bool require = false;
  std::string log_path;
};

const Loaded& loaded(const jit::NvrtcOptions& opts) {
  static const Loaded* l = [&] {
    auto* x = new Loaded();
    const char* mode = std::getenv("ALLOY_AOT");
    const std::string m = mode ? mode : "";
    x->require = m == "require";
    if (const char* log = std::getenv("ALLOY_AOT_LOG")) x->log_path = log;
    if (m == "0" || m == "off") {
      x->status = "disabled by ALLOY_AOT=" + m;
      return x;
    }
    const char* env = std::getenv("ALLOY_AOT_KERNELS");
    std::string path = env && *env ? env : jit::cuda_libraries::own_library_dir() + "/alloy_kernels.aot";
    std::string why;
    x->archive = jit::AotArchive::open(path, aot_fingerprint(opts), &why);
    if (x->archive) {
      x->status = path + ": " + std::to_string(x->archive->entries()) + " images";
    } else {
      x->status = why;
    }
    return x;
  }();
  return *l;
}

}  // namespace

std::optional<jit::AotImage> aot_image(const std::string& key, const std::string& source,
                                       const jit::NvrtcOptions& opts) {
  const Loaded& l = loaded(opts);
  const std::string& arch = opts.arch;
  if (l.archive) {
    const int sm = std::atoi(arch.c_str() + (arch.rfind("sm_", 0) == 0 ? 3 : 0));
    if (auto image = l.archive->find(jit::digest_hex(source), sm)) return image;
  }
  if (l.require) {
    throw std::runtime_error("[cuda kernels] the op kernel '" + key + "' for " + arch +
                             " is not among the kernels compiled ahead of time, and ALLOY_AOT=require forbids "
                             "compiling it now (archive: " + l.status + ").");
  }
  if (!l.log_path.empty()) {
    static std::mutex m;
    std::lock_guard<std::mutex> lock(m);
    std::ofstream(l.log_path, std::ios::app) << key << " " << arch << "\n";
  }
  return std::nullopt;
}

std::string aot_status() { return loaded(kernel_compile_options("sm_90")).status; }

}  // namespace alloy::cuda
