// Primitives to bytes and back, for export_function. Each exportable
// primitive class exposes state() (std::tie of the fields its constructor
// takes after the stream, in order); one registration per class here makes
// it writable and readable. Also the output shapes of the primitives whose
// shapes follow from their inputs', for shapeless imports.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "alloy/array.h"
#include "alloy/primitive.h"

namespace alloy::export_detail {

struct EncodedPrimitive {
  std::string tag;    // the class, as registered
  std::string state;  // its fields
};

// Throws std::invalid_argument naming the primitive when it cannot be exported.
EncodedPrimitive encode_primitive(const Primitive& p);
// Throws std::runtime_error for an unknown tag or malformed state.
std::shared_ptr<Primitive> decode_primitive(const EncodedPrimitive& e, Stream s);
// The tag `p` is registered under, if any.
std::optional<std::string> registered_tag(const Primitive& p);
// The output shapes of `p` on inputs of these shapes, where they follow from
// the inputs' shapes alone; nullopt where the primitive holds fixed shapes.
std::optional<std::vector<Shape>> infer_output_shapes(const EncodedPrimitive& e, const Primitive& p,
                                                      const std::vector<Shape>& inputs);

}  // namespace alloy::export_detail
