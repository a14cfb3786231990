// Cumulative sum/product/max/min along one axis, forward or reversed,
// inclusive or exclusive. Output dtype = input dtype.
#pragma once

#include <tuple>

#include "alloy/primitive.h"
#include "backend/common/scan_ops.h"

namespace alloy {

class Scan : public Primitive {
 public:
  // The fields that rebuild it (export_function).
  auto state() const { return std::tie(op_, axis_, reverse_, inclusive_); }
  Scan(Stream s, ScanOp op, int axis, bool reverse, bool inclusive)
      : Primitive(s), op_(op), axis_(axis), reverse_(reverse), inclusive_(inclusive) {}
  const char* name() const override { return kScanOpNames[static_cast<int>(op_)]; }
  bool graph_capturable() const override { return true; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  void eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  std::vector<array> vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                         const std::vector<int>& argnums, const std::vector<array>& outputs) override;
  std::vector<array> jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                         const std::vector<int>& argnums) override;
  bool is_equivalent(const Primitive& other) const override;

 private:
  ScanOp op_;
  int axis_;
  bool reverse_;
  bool inclusive_;
};

}  // namespace alloy
