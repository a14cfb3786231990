// The CPU target's fastest way to run a kernel whose threads synchronise:
// split its body at each barrier and SIMD-group call into regions, and run
// each region as a plain loop over the threadgroup's threads. A value that
// lives from one region into another is kept in a per-thread array; a
// SIMD-group call is a loop that deposits every lane's value, then the
// next region reads each lane's result. No stack switches, no frames: the
// compiler sees ordinary loops (runtime: alloy_msl::cpu::run_regions).
//
// It takes the control flow it can prove uniform over the group: barriers
// and SIMD-group calls in straight-line code of the kernel's body, barriers
// in `for` and `while` loops there (every thread must agree on the loop's
// condition; a thread that leaves early waits after the loop until the
// others do, as a SIMT machine reconverges there), SIMD-group calls under
// an `if` whose threads may differ (each branch runs for the threads that
// take it). Anything else (a barrier under such an `if`, `break` out of a
// loop with barriers, a value that must live across regions declared with several
// declarators) runs on coroutines, as the plan's `why_not` says.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "alloy/msl/translate.h"
#include "msl/lexer.h"

namespace alloy::msl {

// A statement of the body, as token indices.
struct BodyStmt {
  enum class Kind { Simple, Block, If, For, While, Do, Switch, Directive };
  Kind kind = Kind::Simple;
  std::size_t begin = 0, end = 0;    // [begin, end)
  std::size_t open = 0, close = 0;   // the ( ) of an if/for/while/switch header
  std::vector<BodyStmt> kids;        // a block's statements; an if's branches; a loop's body
};

// A declaration of the body's own scope whose value lives across regions.
struct HoistedVariable {
  std::size_t type_begin = 0, name = 0, end = 0;  // tokens: type [type_begin, type_end), dims (name, end)
  bool initialised = false;                     // `T x = ...`: becomes `x[tid] = ...`
  // `T a[N] = {...}` (or `T a[N]{...}`): the initialiser fills a temporary
  // that is copied into the thread's array.
  bool array_initialised = false;
  // Declared `auto`: the frame's array takes the type a lambda that repeats
  // the declarations it depends on deduces (RegionsPlan::type_declarations).
  bool deduced = false;
  // One of several declarators of a statement (`float a = x, b[4], c;`,
  // each then hoisted): its type ends at the first one's name (type_end;
  // that name for a lone one). The statement becomes the comma expression
  // of the initialised ones' assignments; an uninitialised one's `,`
  // (separator) goes with it.
  std::size_t type_end = 0, separator = 0;
  // Its per-thread array in the frame: its name, or for a name the body
  // declares again (in a block of its own) `alloy_<n>_<name>`.
  std::string storage;
  // `T x(...)` or `T x{...}` (not `auto`): becomes `x = T(...)`, `x = T{...}`.
  bool constructed = false;
};

// A declaration the deduced types of the frame need, in the body's order:
// an `auto` one is repeated with its initialiser (never run: only its type
// is asked), another as its type and name.
struct TypeDeclaration {
  // type [type_begin, type_end), name and dims [name, after); end: its `;`
  std::size_t type_begin = 0, type_end = 0, name = 0, after = 0, end = 0;
  bool uses_auto = false;
};

// Rows of threads (cpu_uniform_values.h, thread_rows): the body's position
// `e` and the value `K` it is divided by.
struct ThreadRows {
  std::string index_type;                       // the position's declared type, without const
  std::string divisor;                          // K: a uniform declaration's or constant's name, or a literal
  std::set<std::size_t> quotients, remainders;  // the position's token in each `e / K` and `e % K`
};

struct RegionsPlan {
  std::size_t begin = 0, end = 0;  // the body's tokens (inside its braces, for a program's kernel)
  std::vector<BodyStmt> body;
  std::vector<HoistedVariable> hoisted;
  std::vector<TypeDeclaration> type_declarations;  // for the `deduced` ones
  // Each use of a hoisted value (token) -> its array (HoistedVariable::storage).
  std::map<std::size_t, std::string> hoisted_uses;
  // The first token of the body's first statement that is not the group's
  // own declaration (threadgroup storage, a constant), or of its first
  // preprocessor condition: the per-thread frame of the hoisted values is
  // declared just before it, after the constants an array's extent may
  // name; past every statement when there is none.
  std::size_t frame_at = 0;
  // The body's own constexpr declarations and type aliases (`typedef float
  // U;`) after frame_at (their statements' [begin, end)): written just
  // before the frame instead, so that its members' types may name them (a
  // constexpr value is no thread's own; a region's alias would be its own).
  std::vector<std::pair<std::size_t, std::size_t>> moved_constants;
  // The parameters the body changes (`y += row * D;`): the group runs the
  // body once, so each thread's copy lives in the frame, set from the
  // parameter before the first region.
  std::vector<std::string> copied_params;
  // `for` loops with barriers whose trips every thread shares (their first
  // token): one plain loop around their regions (cpu_uniform_loops.h).
  std::set<std::size_t> uniform_loops;
  // `if` statements with barriers whose condition every thread shares (their
  // first token): a plain `if` of the group around each branch's regions.
  std::set<std::size_t> uniform_ifs;
  // `if` statements with SIMD-group calls (no barriers) whose condition may
  // differ between threads: each branch's regions run for the threads that
  // take it (runtime: region_branch).
  std::set<std::size_t> branching_ifs;
  // Consecutive SIMD-group statements that share one exchange
  // (simd_batch_length): the first's first token -> how many; absent: one.
  std::map<std::size_t, std::size_t> simd_batches;
  // Declarations whose value the group's threads share (their statements'
  // first tokens; cpu_uniform_values.h): moved to the group's scope, after
  // its attribute values (group_values), just before the frame.
  std::set<std::size_t> uniform_declarations;
  // Rows of threads: each region loops over them with region_for_rows, and
  // the divisions named become its row and column.
  std::optional<ThreadRows> rows;
  std::set<std::string> thread_names;  // attribute values that differ between the group's threads
  // Macros whose bodies name something (LexedText::macros_naming_anything):
  // a test naming one may call, index or divide where it cannot be seen.
  std::set<std::string> opaque_macros;
  // Declarations of the attribute values the group's threads share
  // (threadgroup_position_in_grid, threads_per_threadgroup, ...), valid at
  // the group's own scope: a uniform loop's header may read them.
  std::vector<std::string> group_values;
  // Declarations of the thread's attribute values each region starts with
  // (`const auto thread_position_in_grid = ...;`, `const uint2 gid = ...;`).
  std::vector<std::string> thread_values;
  bool bounds_check = false;  // each region checks with its thread's alloy_bc
  // A program's entry: its attribute parameters go (the group passes
  // alloy_g, before `params_close`), and so do the program's other kernels.
  std::vector<std::pair<std::size_t, std::size_t>> dropped;  // token ranges
  std::size_t params_close = 0;                              // 0: a metal_kernel body
  bool other_params = false;                                 // parameters stay before alloy_g
};

// nullopt, with `why_not` set, where the metal_kernel body (its tokens:
// comments dropped, directives as tokens) cannot be split.
std::optional<RegionsPlan> plan_regions(const KernelSpec& spec, const LexedKernel& lexed,
                                        const std::vector<std::string>& attributes, std::string& why_not);

// The rewrite of the body into regions: writes out[i] for the body's tokens
// (composing with replacements already there). The first token's text then
// starts with the per-thread arrays; the last token's ends the last region.
void split_regions(const RegionsPlan& plan, const std::vector<Token>& toks, std::vector<std::optional<std::string>>& out);

}  // namespace alloy::msl
