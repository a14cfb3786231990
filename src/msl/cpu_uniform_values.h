// Declarations of the kernel body whose value every thread of a group
// shares (`int W = x_shape[2];`, `int C_padded = ceildiv(C, 32) * 32;`):
// the CPU's regions (cpu_regions.h) evaluate them once for the group, at
// its own scope before the first region, instead of once per thread in
// each region that needs them. Their values then need no per-thread array
// in the frame, the compiler sees them as invariants of the loops over the
// group's threads (a division by one is no longer computed per thread),
// and loops and branches whose headers read them can be the group's own
// (cpu_uniform_loops.h).
//
// A declaration qualifies when it is a statement of the body's own scope
// with one plain declarator (no array, reference, static, threadgroup or
// constexpr) initialised by `=` from what a uniform loop header may read
// (numbers, parameters, template constants, the group's attributes, pure
// calls) or from earlier such declarations and constants of the body's
// scope; its elements read only from buffers the kernel cannot write (a
// metal_kernel's inputs and their shapes and strides); its name declared
// once, not named before it, never changed after it (assigned, incremented,
// its address taken, or passed alone to a call that is not a pure function);
// and it comes before the body's first preprocessor line after its start
// and before any `return` (evaluated early, a read that a return guarded
// could reach past a buffer's end).
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "msl/cpu_regions.h"
#include "msl/cpu_uniform_loops.h"

namespace alloy::msl {

struct UniformDeclarations {
  std::set<std::size_t> statements;  // their statements' first tokens
  std::set<std::size_t> names;       // their names' tokens
};

// The body's uniform declarations (tokens [body_begin, body_end), top-level
// statements `body`). `names` (body_names, with the kernel's thread values)
// loses the names found and the body's constants, which are then as uniform
// as a parameter. `written`: the parameters whose elements the kernel may
// write (its outputs); `element_reads`: false where no element of any
// buffer may be read early (a program's kernel, whose buffers may all be
// written; bounds-checked kernels).
UniformDeclarations uniform_declarations(const std::vector<Token>& t, const std::vector<BodyStmt>& body,
                                         std::size_t body_begin, std::size_t body_end, UniformNames& names,
                                         const std::set<std::string>& written, bool element_reads);

// Rows of threads: the body names its thread's position
// (`uint elem = thread_position_in_grid.x;`, an integer or `auto` declared
// once and never changed) and divides it by a value every thread shares
// (`elem / C_padded`, `elem % C_padded`: a point and its
// channel, a row and its column). The regions then run the group's threads
// row by row (runtime: region_for_rows) and each such quotient and
// remainder becomes the row and column the loop counts, so that the
// compiler sees what a row's threads share as invariant in the loop over
// its columns. One divisor per kernel, the one divided by most often.
//
// A use is replaced only where the tokens `e / K` are the whole operand
// they read: after `(`, `[`, `,`, `=`, `return`, a binary operator of lower
// precedence or the like (never after `*`, `/`, `%`, a cast or a unary
// operator: `a * e / K` is `(a * e) / K`), and with no `[`, `(` or `.`
// after K. Replacing fewer uses only costs speed: the others still divide.
//
// nullopt where the body has no such division (ThreadRows: cpu_regions.h). The divisors: integer
// uniform declarations (`uniform`, uniform_declarations), the kernel's
// integer template constants (`constants`) and integer literals of at least
// 8 (`elem / 32`: a SIMD group's lanes).
std::optional<ThreadRows> thread_rows(const std::vector<Token>& t, const std::vector<BodyStmt>& body,
                                      std::size_t body_begin, std::size_t body_end, const UniformNames& names,
                                      const UniformDeclarations& uniform, const std::set<std::string>& constants);

// Whether tokens `t` have `= thread_position_in_grid.x;`, the declaration
// thread_rows starts from: a cheap test that spares a kernel without one
// the passes of a plan.
bool may_have_thread_rows(const std::vector<Token>& t);

}  // namespace alloy::msl
