// Functions a loaded library defines but does not export, found by name in
// its ELF symbol table (.symtab, which MLX's wheels keep). alloy.mlx uses it
// for MLX's own CUDA output allocator (eval_cuda.cpp), which libmlx's export
// list leaves out; a library without .symtab gives nullptr, and the caller
// falls back to an exported path.
#pragma once

#include <string_view>

namespace alloy::mlx {

// The run-time address of the function or object `mangled_name` in the
// loaded library whose exported symbol `anchor` is, or nullptr when its file
// has no symbol table, the table has no defined entry of that name, or the
// anchor's own entry does not give the anchor's address (the file on disk is
// not the image loaded).
void* find_private_symbol(const void* anchor, std::string_view mangled_name);

// mlx::core::cu::malloc_async(size_t, cu::CommandEncoder&): device memory
// from the device's pool on the encoder's stream, through MLX's buffer cache,
// as MLX's own ops allocate their outputs (MLX 0.32).
inline constexpr std::string_view kMlxCudaMallocAsync = "_ZN3mlx4core2cu12malloc_asyncEmRNS1_14CommandEncoderE";

}  // namespace alloy::mlx
