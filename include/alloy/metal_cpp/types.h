// The plain types of metal-cpp (NS::UInteger, MTL::Size, MTL::Origin) as
// Apple's headers define them, for host code written against metal-cpp.
#pragma once

#include <cstdint>

namespace NS {
using UInteger = unsigned long;
using Integer = long;
}  // namespace NS

namespace MTL {

struct Size {
  Size() = default;
  Size(NS::UInteger w, NS::UInteger h, NS::UInteger d) : width(w), height(h), depth(d) {}
  static Size Make(NS::UInteger w, NS::UInteger h, NS::UInteger d) { return Size(w, h, d); }
  NS::UInteger width = 0, height = 0, depth = 0;
};

struct Origin {
  Origin() = default;
  Origin(NS::UInteger x_, NS::UInteger y_, NS::UInteger z_) : x(x_), y(y_), z(z_) {}
  NS::UInteger x = 0, y = 0, z = 0;
};

}  // namespace MTL
