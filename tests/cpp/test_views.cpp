// Views share their input's buffer (slicing with steps, transpose, broadcast,
// reshape of contiguous data, expand/squeeze); reshape of non-contiguous data
// copies; the values are right.
#include <gtest/gtest.h>

#include <numeric>

#include "alloy/ops.h"
#include "alloy/transforms.h"

using namespace alloy;

namespace {

array iota_array(const Shape& shape) {
  std::vector<float> v(shape_size(shape));
  std::iota(v.begin(), v.end(), 0.0f);
  // Copied on the default device, so the views below are views of memory
  // that lives there (a host array used on the GPU is first copied over).
  array a = copy(array(v, shape));
  eval(a);
  return a;
}

// Element at a multi-index through the array's own strides.
float at(const array& a, std::initializer_list<int> idx) {
  int64_t off = 0;
  int d = 0;
  for (int i : idx) off += static_cast<int64_t>(i) * a.strides()[d++];
  return to_host(a).data<float>()[off];
}

bool shares(const array& a, const array& b) { return a.data_shared_ptr().get() == b.data_shared_ptr().get(); }

}  // namespace

TEST(Views, SliceWithStepsSharesBuffer) {
  array a = iota_array({4, 6});
  array s = slice(a, {3, 1}, {-1, 6}, {-2, 2});  // a[3::-2, 1::2]
  eval(s);
  EXPECT_TRUE(shares(a, s));
  ASSERT_EQ(s.shape(), (Shape{2, 3}));
  EXPECT_EQ(s.strides(), (Strides{-12, 2}));
  EXPECT_EQ(at(s, {0, 0}), 19.0f);
  EXPECT_EQ(at(s, {1, 2}), 11.0f);
  EXPECT_FALSE(s.flags().contiguous);
}

TEST(Views, TransposeSharesBuffer) {
  array a = iota_array({2, 3, 4});
  array t = transpose(a, {2, 0, 1});
  eval(t);
  EXPECT_TRUE(shares(a, t));
  EXPECT_EQ(t.strides(), (Strides{1, 12, 4}));
  EXPECT_EQ(at(t, {3, 1, 2}), 23.0f);
  EXPECT_TRUE(t.flags().contiguous);
  EXPECT_FALSE(t.flags().row_contiguous);
}

TEST(Views, BroadcastExpandSqueezeShareBuffer) {
  array a = iota_array({3, 1});
  array b = broadcast_to(a, {2, 3, 5});
  array e = expand_dims(a, 0);
  array q = squeeze(a);
  eval(b, e, q);
  EXPECT_TRUE(shares(a, b));
  EXPECT_TRUE(shares(a, e));
  EXPECT_TRUE(shares(a, q));
  EXPECT_EQ(b.strides()[0], 0);
  EXPECT_EQ(b.strides()[2], 0);
  EXPECT_EQ(at(b, {1, 2, 4}), 2.0f);
}

TEST(Views, ReshapeOfContiguousSharesBuffer) {
  array a = iota_array({4, 6});
  array r = reshape(a, {2, -1, 3});
  eval(r);
  EXPECT_TRUE(shares(a, r));
  EXPECT_EQ(r.shape(), (Shape{2, 4, 3}));
  // A slice keeping whole rows stays viewable after merging the row dims.
  array rows = slice(a, {1, 0}, {3, 6}, {1, 1});
  array merged = reshape(rows, {12});
  eval(merged);
  EXPECT_TRUE(shares(a, merged));
  EXPECT_EQ(at(merged, {0}), 6.0f);
}

TEST(Views, ReshapeOfNonContiguousCopies) {
  array a = iota_array({4, 6});
  array t = transpose(a);
  array r = reshape(t, {24});
  eval(r);
  EXPECT_FALSE(shares(a, r));
  EXPECT_TRUE(r.flags().row_contiguous);
  for (int i = 0; i < 24; ++i) EXPECT_EQ(to_host(r).data<float>()[i], static_cast<float>((i % 4) * 6 + i / 4));
  // Column slice then flatten: a gap between rows forces a copy too.
  array cols = slice(a, {0, 1}, {4, 3}, {1, 1});
  array f = reshape(cols, {8});
  eval(f);
  EXPECT_FALSE(shares(a, f));
  EXPECT_EQ(to_host(f).data<float>()[2], 7.0f);
}

TEST(Views, EmptySliceDoesNotPointOutside) {
  array a = iota_array({3, 4});
  array s = slice(a, {3, 0}, {3, 4}, {1, 1});
  eval(s);
  EXPECT_EQ(s.size(), 0u);
  EXPECT_EQ(s.offset(), a.offset());
}
