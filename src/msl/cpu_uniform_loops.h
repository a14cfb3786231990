// Which `for` loops run the same trips in every thread of a group. Two
// users: the CPU's regions (cpu_regions.h) run such a loop with barriers as
// one plain loop around its regions, the counter an ordinary local of the
// group, instead of evaluating the condition and the increment for every
// thread in regions of their own (two extra passes over the group per
// trip); CUDA's reconvergence before SIMD-group calls (converged_calls.h)
// follows such loops, whose every trip all lanes of a warp make.
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

#include "msl/cpu_regions.h"
#include "msl/lexer.h"

namespace alloy::msl {

struct UniformNames {
  std::set<std::string> body_locals;    // every name the kernel body declares
  std::set<std::string> repeated;       // those it declares more than once (see body_names)
  std::set<std::string> declared_once;  // those it declares exactly once, anywhere
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

// The condition in tokens [b, e) reads only what every thread of the group
// shares, by the same rules as a loop's header.
bool is_uniform_condition(const std::vector<Token>& t, std::size_t b, std::size_t e, const UniformNames& names);

// The name at t[k] is assigned (`=`, `op=`), incremented or decremented
// there; with `or_address`, also where its address is taken (`a & c`
// counts too: conservative).
bool changes_name_at(const std::vector<Token>& t, std::size_t k, bool or_address);

// The same for statement `s` (a BodyStmt of kind For): its init must
// declare one plain counter with `=`.
bool is_uniform_for(const std::vector<Token>& t, const BodyStmt& s, const UniformNames& names);

// A call a uniform clause may make: a function of its arguments alone
// (Metal's math and integer functions, MLX's ceildiv) or a cast.
bool is_pure_call(const std::string& name);

// Metal's attributes whose values differ between the threads of a group.
const std::set<std::string>& per_thread_attributes();
inline bool per_thread_attribute(const std::string& name) { return per_thread_attributes().count(name) > 0; }

// The names the statements declare (loops' init clauses and nested blocks
// included) as body_locals; as repeated, those declared more than once
// outside statements without a barrier or SIMD-group call (inside one, a
// declaration is a C++ local of the one region that runs it, never in the
// group's frame). The other fields are the caller's.
UniformNames body_names(const std::vector<Token>& t, const std::vector<BodyStmt>& body);

// The macros of a kernel's source, header and included MLX headers whose
// bodies contain an identifier (LexedText::macros_naming_anything).
std::set<std::string> macros_naming_anything(const LexedKernel& lexed);

}  // namespace alloy::msl
