#include "primitives/view.h"

#include "alloy/ops.h"
#include "alloy/ops_math.h"
#include "ops/op_utils.h"
#include "primitives/shape.h"

namespace alloy {

bool reinterpret_view(const array& in, array& out) {
  if (in.itemsize() == out.itemsize()) {
    out.copy_shared_buffer(in);
    return true;
  }
  const int64_t byte_offset = in.offset() * static_cast<int64_t>(in.itemsize());
  const int64_t out_item = static_cast<int64_t>(out.itemsize());
  if (out.size() != 0 && byte_offset % out_item != 0) return false;
  Strides strides = row_major_strides(out.shape());
  size_t data_size = 0;
  ArrayFlags flags = view_flags(out.shape(), strides, &data_size);
  out.set_data(in.data_shared_ptr(), data_size, strides, flags, out.size() == 0 ? 0 : byte_offset / out_item);
  return true;
}

void as_strided_view(const array& in, array& out, const AsStrided& p) {
  make_view(in, out, p.strides(), static_cast<int64_t>(p.offset()));
}

bool View::is_equivalent(const Primitive& o) const {
  auto* other = dynamic_cast<const View*>(&o);
  return other && other->dtype_ == dtype_;
}

bool AsStrided::is_equivalent(const Primitive& o) const {
  auto* other = dynamic_cast<const AsStrided*>(&o);
  return other && other->shape_ == shape_ && other->strides_ == strides_ && other->offset_ == offset_;
}

// Each output element reads flat input position offset + sum_k i_k * stride_k;
// the cotangents of elements read more than once add up.
std::vector<array> AsStrided::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                                  const std::vector<int>&, const std::vector<array>&) {
  const Stream s = stream();
  const array& x = primals[0];  // flat (the op flattens its input)
  array positions = array(static_cast<int64_t>(offset_), Dtype::int64);
  for (size_t k = 0; k < shape_.size(); ++k) {
    Shape line(shape_.size(), 1);
    line[k] = shape_[k];
    array step = multiply(arange(0, shape_[k], 1, Dtype::int64, s), array(strides_[k], Dtype::int64), s);
    positions = add(positions, reshape(step, line, s), s);
  }
  positions = reshape(broadcast_to(positions, shape_, s), {-1}, s);
  array g = reshape(cotangents[0], {-1}, s);
  return {scatter_add_along_axis(zeros_like(x, s), positions, g, 0, s)};
}

std::vector<array> AsStrided::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                                  const std::vector<int>&) {
  return {array(shape_, tangents[0].dtype(), std::make_shared<AsStrided>(stream(), shape_, strides_, offset_),
                {tangents[0]})};
}

}  // namespace alloy
