// Sort / ArgSort / Partition / ArgPartition: derivatives (built from ops
// only). All work along the last axis.
#include "primitives/sort.h"

#include "alloy/ops.h"
#include "ops/op_utils.h"

namespace alloy {

namespace {
// The permutation that produced `y = sort(x)`: argsort of the same input.
array permutation_of(const array& x, Stream s) {
  return array(x.shape(), Dtype::uint32, std::make_shared<ArgSort>(s), {x});
}
}  // namespace

// y[j] = x[p[j]]: each cotangent flows back to the element it came from.
// p is a permutation, so no two cotangents meet.
std::vector<array> Sort::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                             const std::vector<int>&, const std::vector<array>&) {
  const array& x = primals[0];
  if (x.size() == 0) return {zeros_like(x, stream())};
  array p = permutation_of(x, stream());
  return {scatter_add_along_axis(zeros_like(cotangents[0], stream()), p, cotangents[0], x.ndim() - 1, stream())};
}

std::vector<array> Sort::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                             const std::vector<int>&) {
  const array& x = primals[0];
  if (x.size() == 0) return {zeros_like(tangents[0], stream())};
  return {take_along_axis(tangents[0], permutation_of(x, stream()), x.ndim() - 1, stream())};
}

// Indices are piecewise constant in the input.
std::vector<array> ArgSort::vjp(const std::vector<array>& primals, const std::vector<array>&,
                                const std::vector<int>&, const std::vector<array>&) {
  return {zeros_like(primals[0], stream())};
}

std::vector<array> ArgSort::jvp(const std::vector<array>& primals, const std::vector<array>&,
                                const std::vector<int>&) {
  return {zeros(primals[0].shape(), Dtype::uint32, stream())};
}

namespace {
// Where each output element of y = partition(x) came from: a p with
// x[p[j]] == y[j]. ArgPartition need not arrange ties as Partition does (on
// the CPU they are separate selections, as MLX's), so match ranks instead:
// the r-th element of y in stable sorted order is the r-th of x.
array partition_source(const array& x, const array& y, Stream s) {
  const int last = x.ndim() - 1;
  array by_x = permutation_of(x, s);
  array by_y = permutation_of(y, s);
  return put_along_axis(zeros(x.shape(), Dtype::uint32, s), by_y, by_x, last, s);
}
}  // namespace

std::vector<array> Partition::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                                  const std::vector<int>&, const std::vector<array>& outputs) {
  const array& x = primals[0];
  if (x.size() == 0) return {zeros_like(x, stream())};
  array p = partition_source(x, outputs[0], stream());
  return {scatter_add_along_axis(zeros_like(cotangents[0], stream()), p, cotangents[0], x.ndim() - 1, stream())};
}

std::vector<array> Partition::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                                  const std::vector<int>&) {
  const array& x = primals[0];
  if (x.size() == 0) return {zeros_like(tangents[0], stream())};
  array y(x.shape(), x.dtype(), std::make_shared<Partition>(stream(), kth_), {x});
  return {take_along_axis(tangents[0], partition_source(x, y, stream()), x.ndim() - 1, stream())};
}

std::vector<array> ArgPartition::vjp(const std::vector<array>& primals, const std::vector<array>&,
                                     const std::vector<int>&, const std::vector<array>&) {
  return {zeros_like(primals[0], stream())};
}

std::vector<array> ArgPartition::jvp(const std::vector<array>& primals, const std::vector<array>&,
                                     const std::vector<int>&) {
  return {zeros(primals[0].shape(), Dtype::uint32, stream())};
}

}  // namespace alloy
