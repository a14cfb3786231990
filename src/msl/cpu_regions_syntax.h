// The statements of a kernel body as the CPU's regions (cpu_regions.h) see
// them: a small parser of its statements into BodyStmt trees, declarations,
// for-loop clauses and the synchronising calls in them. Private to the
// regions' plan and rewrite (msl/cpu_regions.cpp, msl/cpu_regions_split.cpp).
#pragma once

#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "msl/cpu_regions.h"

namespace alloy::msl::regions {

// Thrown inside the plan: the body is not one regions can take.
struct NotRegions {
  std::string why;
};

std::string line_of(const Token& t);
bool is_barrier_name(const std::string& n);
// An awaitable synchronising call at toks[i] (msl/builtins.h).
bool is_sync_call(const std::vector<Token>& toks, std::size_t i);
bool has_sync(const std::vector<Token>& toks, std::size_t b, std::size_t e);

// The statements of tokens [b, e); throws NotRegions for a form it does not parse.
std::vector<BodyStmt> parse_statements(const std::vector<Token>& toks, std::size_t b, std::size_t e);

struct Declaration {
  std::size_t type_begin = 0, name = 0, after = 0;  // `after`: the token ending the declarator's name and dims
  char init = 0;                                    // '=', '(' or '{'; 0 for none
  bool array = false, multiple = false, threadgroup = false, constant = false, uses_auto = false, is_static = false;
};

// The declaration in tokens [b, e) (a statement without its `;`, or a for
// loop's init clause), if it is one.
std::optional<Declaration> declaration(const std::vector<Token>& t, std::size_t b, std::size_t e);

// Each declarator of that declaration (`int a = 1, b[4], c;`: a, b and c):
// the first as declaration() gives it, the others with the same type_begin
// and flags, their own name, after, init and array; `pointer` where a
// declarator has its own `*` or `&` (its type is not the first's base
// type). Empty where [b, e) is no declaration.
struct Declarator {
  Declaration decl;
  std::size_t comma = 0;  // the `,` before it (0 for the first)
  bool pointer = false;
};
std::vector<Declarator> declarators(const std::vector<Token>& t, std::size_t b, std::size_t e);

// A statement declaring threadgroup storage, a constant or a type's name,
// with no synchronising call: the group's own, declared once at the group's
// scope between regions.
bool group_declaration(const std::vector<Token>& t, const BodyStmt& s);
// `typedef float U;` or `using U = float;` (no Declaration: its name is a type's).
bool type_alias(const std::vector<Token>& t, const BodyStmt& s);

// A for loop's header clauses: [open+1, s1), [s1+1, s2), [s2+1, close).
void for_clauses(const std::vector<Token>& t, const BodyStmt& s, std::size_t& s1, std::size_t& s2);

// A loop's body as a list (`one` holds a single statement's).
const std::vector<BodyStmt>& loop_body(const BodyStmt& s, std::vector<BodyStmt>& one);

// A `break` or `continue` of this loop itself (not of one nested in it).
bool jumps_out(const std::vector<Token>& t, const BodyStmt& s);

bool is_barrier_statement(const std::vector<Token>& t, const BodyStmt& s);

// The SIMD-group calls of a statement: (first token of the name, `metal::`
// qualifier included; closing paren) pairs.
std::vector<std::pair<std::size_t, std::size_t>> simd_calls(const std::vector<Token>& t, const BodyStmt& s);

// SIMD-group calls one statement may make; consecutive statements use two
// sets of slots. The runtime's kRegionCallsPerStatement (metal_cpu_regions.h).
constexpr unsigned kCallsPerStatement = 4;

// How many statements from stmts[i] on share one SIMD-group exchange (one
// region deposits all their calls' arguments, the next reads every result):
// stmts[i], then each next simple statement with SIMD-group calls (no
// barrier) while their calls stay within kCallsPerStatement, every
// statement before it only assigns a name (`float a = simd_sum(x);`,
// `a += simd_max(x) * 2;`: no call, index, member, increment or second
// assignment outside its calls' arguments), and none of its own calls'
// arguments names one of those names. A name whose address is taken in the
// body (`&a`), or any body that declares a reference, keeps each statement
// to its own exchange. 1 for a statement alone.
struct SimdBatchBody {  // what of the body [b, e) decides that, found once
  bool declares_reference = false;
  std::set<std::string> address_taken;  // names after a `&` (a binary one too)
};
SimdBatchBody simd_batch_body(const std::vector<Token>& t, std::size_t b, std::size_t e);
std::size_t simd_batch_length(const std::vector<Token>& t, const std::vector<BodyStmt>& stmts, std::size_t i,
                              const SimdBatchBody& body);

// +1 for a preprocessor line `#if`, `#ifdef` or `#ifndef`, -1 for `#endif`,
// 0 for another directive (`#else` and `#elif` stay inside the condition).
int conditional_directive(const std::string& line);
// Any of those, `#else` and `#elif` included.
bool is_conditional_directive(const std::string& line);

// The value of Metal attribute `name` for thread alloy_tid of the group, at
// alloy_lid in it.
std::string region_attribute(const std::string& name);

// The `&&` tokens of an `if` condition in (open, close) that may be `&`
// (none when one may not): every operand a comparison (`iy >= 0`) of
// arithmetic on names and numbers, which cannot fault or change anything,
// so evaluating them all gives the same answer as stopping early.
// Names in `opaque` (macros that may hide any of those) keep the `&&`.
std::vector<std::size_t> eager_and_operators(const std::vector<Token>& t, std::size_t open, std::size_t close,
                                             const std::set<std::string>& opaque);

}  // namespace alloy::msl::regions
