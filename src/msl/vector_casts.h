// Vector pointers into device or constant memory made safe at any address:
// Apple's GPUs read a float4 wherever its elements may lie, CUDA's vector
// loads need the vector's alignment (runtime/metal_vector_cast.h). One pass
// of rewrite.cpp's token rewriting.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "msl/lexer.h"

namespace alloy::msl {

// Casts to such pointers, `(device const float4*)(row + d)` and
// `reinterpret_cast<device half4*>(p)`, become
// `::alloy_msl::vector_cast<const float4>(...)`, and a variable declared as
// one (`const device float4* q = ...;`) becomes a
// `::alloy_msl::vector_cast_ptr<const float4>`. `out` holds each token's
// replacement (nullopt: as written), updated in place.
void rewrite_vector_casts(const std::vector<Token>& toks, std::vector<std::optional<std::string>>& out);

}  // namespace alloy::msl
