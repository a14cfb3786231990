// Which `for` loops with barriers run the same trips in every thread of a
// group, so that the CPU's regions (cpu_regions.h) can run them as one plain
// loop around their regions, the counter an ordinary local of the group,
// instead of evaluating the condition and the increment for every thread in
// regions of their own (two extra passes over the group per trip).
//
// A loop qualifies when its counter is declared by its init clause and
// changed only by its increment, and the init, the condition and the
// increment read nothing that can differ between threads: numbers, the
// counter, and names the kernel body does not declare (its parameters,
// template constants, program-scope constants, the group's own attributes
// such as threads_per_threadgroup), none of them a per-thread attribute or
// a macro with names in its body; calls only to pure math
// functions and casts; no assignment, `++` or `--` but the increment's own.
// Anything else keeps the per-thread condition (a thread may then leave
// early and wait after the loop, as before).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "msl/lexer.h"

namespace alloy::msl {

struct UniformNames {
  std::set<std::string> body_locals;    // every name the kernel body declares
  std::set<std::string> repeated;       // those it declares more than once
  std::set<std::string> thread_values;  // per-thread attribute names (thread_position_in_grid, a program's `lid`)
  std::set<std::string> macros;         // macros whose bodies name anything (object- or function-like)
  bool indexing = true;                 // whether `name[...]` may be read (not under bounds checks)
};

// The loop `for (init; cond; inc) body` with tokens init [init_b, init_e),
// cond [cond_b, cond_e), inc [inc_b, inc_e), body [body_b, body_e), whose
// init declares the counter at token `counter`.
struct LoopTokens {
  std::size_t init_b = 0, init_e = 0, cond_b = 0, cond_e = 0, inc_b = 0, inc_e = 0, body_b = 0, body_e = 0;
  std::size_t counter = 0, counter_init = 0;  // the name, and the first token of its initialiser
};

bool is_uniform_loop(const std::vector<Token>& t, const LoopTokens& loop, const UniformNames& names);

// The macros of `text` (a source or header) whose bodies contain an identifier.
void macros_naming_anything(std::string_view text, const std::vector<Token>& tokens, std::set<std::string>& out);

}  // namespace alloy::msl
