#include "primitives/creation.h"

namespace alloy {

bool Arange::is_equivalent(const Primitive& o) const {
  auto* other = dynamic_cast<const Arange*>(&o);
  return other && other->start_ == start_ && other->step_ == step_;
}

}  // namespace alloy
