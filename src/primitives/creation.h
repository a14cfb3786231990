// Primitives that make arrays from nothing but parameters.
#pragma once

#include <tuple>

#include "alloy/primitive.h"

namespace alloy {

// out[i] = start + i * step, computed in double and cast to the output dtype.
class Arange : public Primitive {
 public:
  // The fields that rebuild it (export_function).
  auto state() const { return std::tie(start_, step_); }
  Arange(Stream s, double start, double step) : Primitive(s), start_(start), step_(step) {}
  const char* name() const override { return "Arange"; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  void eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  bool is_equivalent(const Primitive& o) const override;

 private:
  double start_, step_;
};

// num points from start to stop inclusive: start + i * (stop - start) / (num - 1),
// with the last point exactly stop (numpy's rule).
class Linspace : public Primitive {
 public:
  // The fields that rebuild it (export_function).
  auto state() const { return std::tie(start_, stop_); }
  Linspace(Stream s, double start, double stop) : Primitive(s), start_(start), stop_(stop) {}
  const char* name() const override { return "Linspace"; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  void eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;

 private:
  double start_, stop_;
};

// Ones on the k-th diagonal of an (n, m) matrix, zeros elsewhere.
class Eye : public Primitive {
 public:
  // The fields that rebuild it (export_function).
  auto state() const { return std::tie(k_); }
  Eye(Stream s, int k) : Primitive(s), k_(k) {}
  const char* name() const override { return "Eye"; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  void eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;

 private:
  int k_;
};

}  // namespace alloy
