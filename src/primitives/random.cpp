#include "primitives/random.h"

namespace alloy {

bool RandomBits::is_equivalent(const Primitive& o) const {
  auto* other = dynamic_cast<const RandomBits*>(&o);
  return other && other->width_ == width_;
}

}  // namespace alloy
