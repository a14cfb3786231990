// MLX's own kernel headers named by `#include "mlx/backend/metal/kernels/..."`
// in a kernel's header or source, as public projects paste MLX's steel GEMM
// and attention templates. They are read from an installed mlx package (the
// directory in ALLOY_MLX_INCLUDE, which the Python package sets from
// importlib), each once, dependencies first, and translated like the header.
// utils.h and what it includes are not read: MLX prepends utils.h to every
// kernel, and Alloy's runtime (mlx_utils.h) provides its equivalent.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "msl/lexer.h"

namespace alloy::msl {

// The path an `#include` directive names when it is one of MLX's kernel
// headers ("mlx/backend/metal/kernels/..."); nullopt for any other directive.
std::optional<std::string> mlx_include_path(const Token& directive);

// Whether MLX's prepended utils.h already brings `path` (Alloy's runtime
// provides it; the include is a no-op, as it is under MLX).
bool provided_by_runtime(const std::string& path);

// The MLX headers `texts` include, transitively, dependencies first, each
// once. Throws CompileError quoting the include line when a file cannot be
// found (no ALLOY_MLX_INCLUDE, or no such file under it).
std::vector<IncludedFile> resolve_mlx_includes(const std::vector<const LexedText*>& texts);

}  // namespace alloy::msl
