// Scan: derivatives (built from ops only).
#include "primitives/scan.h"

#include <stdexcept>

#include "alloy/ops.h"

namespace alloy {

bool Scan::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const Scan*>(&other);
  return o && o->op_ == op_ && o->axis_ == axis_ && o->reverse_ == reverse_ && o->inclusive_ == inclusive_;
}

std::vector<array> Scan::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                             const std::vector<int>&, const std::vector<array>& outputs) {
  const array& x = primals[0];
  const array& g = cotangents[0];
  switch (op_) {
    // Each input feeds the outputs after it (before it when reversed): the
    // cotangents summed the other way.
    case ScanOp::Sum: return {cumsum(g, axis_, !reverse_, inclusive_, stream())};
    // d out_j / d x_i = out_j / x_i for the inputs out_j multiplies; exact
    // for nonzero inputs (a zero input gives inf/nan, unlike MLX's
    // zero-aware rule).
    case ScanOp::Prod:
      return {divide(cumsum(multiply(g, outputs[0], stream()), axis_, !reverse_, inclusive_, stream()), x, stream())};
    default:
      throw std::invalid_argument(std::string("[") + name() + "] has no vjp yet.");
  }
}

std::vector<array> Scan::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                             const std::vector<int>&) {
  const array& x = primals[0];
  const array& t = tangents[0];
  switch (op_) {
    case ScanOp::Sum: return {cumsum(t, axis_, reverse_, inclusive_, stream())};
    case ScanOp::Prod: {
      array out(x.shape(), x.dtype(), std::make_shared<Scan>(stream(), op_, axis_, reverse_, inclusive_), {x});
      // Exclusive products see t_i / x_i only from the inputs they multiply.
      return {multiply(cumsum(divide(t, x, stream()), axis_, reverse_, inclusive_, stream()), out, stream())};
    }
    default:
      throw std::invalid_argument(std::string("[") + name() + "] has no jvp yet.");
  }
}

}  // namespace alloy
