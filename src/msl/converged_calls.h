// Which statements of a metal_kernel body make their SIMD-group calls with
// every lane of the SIMD group present, as Metal runs them: CUDA does not
// promise that lanes which left a loop or a branch at different times are
// together again at the next statement, so the CUDA target puts a warp
// barrier over the lanes present before each such statement (rewrite.cpp,
// runtime/cuda_sync.h's simd_reconverge). A lane that never reaches the
// barrier would hang the others, so a statement is listed only when every
// lane present reaches it:
//  - the body's own statements, and those of plain blocks among them;
//  - the statements of a `for` loop among them whose trips every thread of
//    the group shares (cpu_uniform_loops.h) and that has no `break` or
//    `continue` of its own, recursively;
//  - the statements of both branches of an `if` among them whose condition
//    every thread shares (by the same rules), recursively;
//  - none after the first statement that contains a `return` or `goto`
//    (the lanes that left cannot join a barrier).
// Statements inside other branches, `while`/`do`/`switch` and other loops are not
// listed: there the calls keep the lanes active at the call.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "msl/lexer.h"

namespace alloy::msl {

struct ConvergedStatement {
  std::size_t begin = 0, end = 0;  // its tokens [begin, end), directives before it excluded
  bool lone_loop_body = false;     // a loop's or branch's body without braces: the barrier needs a block around both
};

// The statements of the body `toks` (a metal_kernel source) that make a
// SIMD-group call with every lane present. `macros`: the macros of the
// kernel's texts whose bodies name anything, which a uniform loop's header
// may not read (program-scope constants it may: MSL's are `constant`); nor
// may it read a subscript or a name the body assigns.
std::vector<ConvergedStatement> converged_simd_statements(const std::vector<Token>& toks,
                                                         const std::set<std::string>& macros);

}  // namespace alloy::msl
