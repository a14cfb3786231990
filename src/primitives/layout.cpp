#include "primitives/layout.h"

#include "alloy/ops.h"

namespace alloy {

bool AsType::is_equivalent(const Primitive& o) const {
  auto* other = dynamic_cast<const AsType*>(&o);
  return other && other->dtype_ == dtype_;
}

std::vector<array> AsType::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                               const std::vector<int>&, const std::vector<array>&) {
  return {astype(cotangents[0], primals[0].dtype(), stream())};
}

std::vector<array> AsType::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                               const std::vector<int>&) {
  return {astype(tangents[0], dtype_, stream())};
}

void broadcast_view(const array& in, array& out) {
  const int extra = out.ndim() - in.ndim();
  Strides strides(out.ndim(), 0);
  for (int i = 0; i < in.ndim(); ++i) {
    strides[i + extra] = in.shape()[i] == 1 ? 0 : in.strides()[i];
  }
  ArrayFlags flags = in.flags();
  if (out.size() > in.size()) {
    flags.row_contiguous = flags.col_contiguous = false;
    flags.contiguous = false;
  }
  out.copy_shared_buffer(in, strides, flags, in.data_size());
}

std::vector<array> Broadcast::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                                  const std::vector<int>&, const std::vector<array>&) {
  const array& in = primals[0];
  const int extra = static_cast<int>(shape_.size()) - in.ndim();
  Axes axes;
  for (int i = 0; i < static_cast<int>(shape_.size()); ++i) {
    if (i < extra || (in.shape()[i - extra] == 1 && shape_[i] != 1)) axes.push_back(i);
  }
  array g = axes.empty() ? cotangents[0] : sum(cotangents[0], axes, true, stream());
  return {reshape(g, in.shape(), stream())};
}

std::vector<array> Broadcast::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                                  const std::vector<int>&) {
  return {broadcast_to(tangents[0], shape_, stream())};
}

}  // namespace alloy

namespace alloy {

void Identity::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  outputs[0].copy_shared_buffer(inputs[0]);
}
void Identity::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  outputs[0].copy_shared_buffer(inputs[0]);
}
std::vector<array> Identity::vjp(const std::vector<array>&, const std::vector<array>& cotangents,
                                 const std::vector<int>&, const std::vector<array>&) {
  return {cotangents[0]};
}
std::vector<array> Identity::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                                 const std::vector<int>&) {
  return {tangents[0]};
}
std::vector<array> StopGradient::vjp(const std::vector<array>& primals, const std::vector<array>&,
                                     const std::vector<int>&, const std::vector<array>&) {
  return {zeros_like(primals[0], stream())};
}
std::vector<array> StopGradient::jvp(const std::vector<array>& primals, const std::vector<array>&,
                                     const std::vector<int>&) {
  return {zeros_like(primals[0], stream())};
}

}  // namespace alloy
