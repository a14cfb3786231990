// Sorting family: sort, argsort, partition, argpartition, topk, median,
// searchsorted, unique (as mlx.core), and random::permutation.
// Index results are uint32, as MLX's.
#pragma once

#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "alloy/array.h"
#include "alloy/device.h"

namespace alloy {

// axis = nullopt sorts the flattened array. Stable; NaNs go last.
array sort(const array& a, std::optional<int> axis = -1, StreamOrDevice s = {});
array argsort(const array& a, std::optional<int> axis = -1, StreamOrDevice s = {});
// Element kth (negative counts from the end) lands in its sorted place.
array partition(const array& a, int kth, std::optional<int> axis = -1, StreamOrDevice s = {});
array argpartition(const array& a, int kth, std::optional<int> axis = -1, StreamOrDevice s = {});
// The k largest along axis (order within them unspecified).
array topk(const array& a, int k, std::optional<int> axis = -1, StreamOrDevice s = {});
// axes = nullopt reduces every axis.
array median(const array& a, const std::optional<std::vector<int>>& axes = std::nullopt, bool keepdims = false,
             StreamOrDevice s = {});
// side: "left" (count of elements < v) or "right" (count <= v).
array searchsorted(const array& sorted_sequence, const array& values, const std::string& side = "left",
                   StreamOrDevice s = {});

struct UniqueResult {
  array values;
  array index;    // uint32: first occurrence in the flattened input
  array inverse;  // uint32, shape of the input
  array counts;   // int32
};
// Sorted unique elements of the flattened array, padded/truncated to `size`.
UniqueResult unique(const array& a, int size, const std::optional<array>& fill_value = std::nullopt,
                    StreamOrDevice s = {});

namespace random {
// A random permutation of arange(n), or of `x` along `axis`.
array permutation(int n, const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});
array permutation(const array& x, int axis = 0, const std::optional<array>& key = std::nullopt,
                  StreamOrDevice s = {});
}  // namespace random

}  // namespace alloy
