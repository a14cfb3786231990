#include "ops/op_utils.h"

#include <algorithm>
#include <stdexcept>

namespace alloy {

int normalize_axis(int axis, int ndim, const char* op) {
  int a = axis < 0 ? axis + ndim : axis;
  if (a < 0 || a >= ndim) {
    throw std::out_of_range(std::string("[") + op + "] axis " + std::to_string(axis) +
                            " is out of bounds for an array with " + std::to_string(ndim) + " dimensions.");
  }
  return a;
}

std::vector<int> normalize_axes(const std::vector<int>& axes, int ndim, const char* op) {
  std::vector<int> out;
  out.reserve(axes.size());
  for (int a : axes) out.push_back(normalize_axis(a, ndim, op));
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end()) {
    throw std::invalid_argument(std::string("[") + op + "] repeated axis in the axes argument.");
  }
  return out;
}

std::string shape_to_string(const Shape& s) {
  std::string r = "(";
  for (size_t i = 0; i < s.size(); ++i) {
    r += std::to_string(s[i]);
    if (i + 1 < s.size() || s.size() == 1) r += ",";
    if (i + 1 < s.size()) r += " ";
  }
  return r + ")";
}

Dtype to_float_dtype(Dtype d) { return is_inexact(d) ? d : Dtype::float32; }

}  // namespace alloy
