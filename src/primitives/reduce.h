// Reductions over a set of axes, and arg reductions along one axis. The
// output holds the reduced axes as size 1 (keepdims) or drops them: the
// element order is the same either way, so one kernel serves both.
#pragma once

#include <tuple>

#include "alloy/primitive.h"
#include "backend/common/reduce_ops.h"

namespace alloy {

class Reduce : public Primitive {
 public:
  // The fields that rebuild it (export_function).
  auto state() const { return std::tie(op_, axes_, keepdims_); }
  Reduce(Stream s, ReduceOp op, std::vector<int> axes, bool keepdims)
      : Primitive(s), op_(op), axes_(std::move(axes)), keepdims_(keepdims) {}
  const char* name() const override { return reduce_info(op_).name; }
  bool graph_capturable() const override { return true; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  void eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  std::vector<array> vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                         const std::vector<int>& argnums, const std::vector<array>& outputs) override;
  std::vector<array> jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                         const std::vector<int>& argnums) override;
  bool is_equivalent(const Primitive& other) const override;
  ReduceOp op() const { return op_; }
  const std::vector<int>& axes() const { return axes_; }  // sorted, non-negative
  bool keepdims() const { return keepdims_; }

 private:
  ReduceOp op_;
  std::vector<int> axes_;
  bool keepdims_;
};

// Output dtype of a reduction (the runtime twin of reduce_out_t).
Dtype reduce_out_dtype(ReduceOp op, Dtype in);

// Index (uint32) of the first max/min along `axis`.
class ArgReduce : public Primitive {
 public:
  // The fields that rebuild it (export_function).
  auto state() const { return std::tie(op_, axis_, keepdims_); }
  ArgReduce(Stream s, ArgReduceOp op, int axis, bool keepdims)
      : Primitive(s), op_(op), axis_(axis), keepdims_(keepdims) {}
  const char* name() const override { return op_ == ArgReduceOp::ArgMax ? "ArgMax" : "ArgMin"; }
  bool graph_capturable() const override { return true; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  void eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  std::vector<array> vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                         const std::vector<int>& argnums, const std::vector<array>& outputs) override;
  std::vector<array> jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                         const std::vector<int>& argnums) override;
  bool is_equivalent(const Primitive& other) const override;

 private:
  ArgReduceOp op_;
  int axis_;
  bool keepdims_;
};

// Variance of a matrix's rows (axis 1: [rows, n] -> [rows, 1]) or columns
// (axis 0: [n, cols] -> [1, cols]) in one pass over the input (moments
// merged as they are read); float dtypes, computed in float32 (float64 for
// float64) and rounded once. var() builds it for trailing or leading axes.
class Variance : public Primitive {
 public:
  std::tuple<int, int> state() const { return {axis_, ddof_}; }
  Variance(Stream s, int axis, int ddof) : Primitive(s), axis_(axis), ddof_(ddof) {}
  const char* name() const override { return "Variance"; }
  bool graph_capturable() const override { return true; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  void eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  std::vector<array> vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                         const std::vector<int>& argnums, const std::vector<array>& outputs) override;
  std::vector<array> jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                         const std::vector<int>& argnums) override;
  bool is_equivalent(const Primitive& other) const override;
  int axis() const { return axis_; }
  // What the sum of squared deviations is divided by: n - ddof, or 0.
  double divisor(const array& input) const;

 private:
  int axis_;
  int ddof_;
};

}  // namespace alloy
