// User code (kernel body or header) rewritten to C++ for the runtime
// headers, token by token, keeping every line where it was so that `#line`
// maps compiler messages back. The rules are docs/design/msl.md's
// "Translation rules"; both C++ targets share them (the runtime headers
// differ, not the translated code).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "alloy/msl/translate.h"
#include "msl/cpu_threads.h"
#include "msl/lexer.h"
#include "msl/writer.h"

namespace alloy::msl {

// Names the user declares (types, typedefs, macros, variables, functions):
// they are never taken for invalid Metal vector types.
std::set<std::string> user_declared_names(const LexedText& text);

// Throws CompileError at an unmatched or unclosed bracket of `text`.
void check_brackets(const LexedText& text);

// Writes `text` (Origin::Source or Origin::Header) translated; throws
// CompileError for an invalid vector type. `storage` places the body's
// threadgroup arrays at the kernel's own scope (KernelSpec::
// threadgroup_storage); returns how many it placed that way.
// `whole_program`: `text` is a metal_library program, whose program-scope
// `kernel` functions become functions the glue calls and whose explicit
// instantiations are dropped (the glue instantiates what it calls).
// `threads`: the CPU target runs the kernel's threads as coroutines
// (msl/cpu_threads.h); its bodies in `text` are rewritten for that.
// `macros`: for a kernel body, the macros of its texts whose bodies name
// anything (cpu_uniform_loops.h), which a loop header that all threads
// share may not read; unknown (every user name suspect) when null.
int rewrite_user_code(const LexedText& text, Origin origin, const std::set<std::string>& user_names, Writer& w,
                      KernelSpec::ThreadgroupStorage storage = KernelSpec::ThreadgroupStorage::Static,
                      bool whole_program = false, const CpuThreadsPlan* threads = nullptr,
                      const std::set<std::string>* macros = nullptr);

// A kernel body (Origin::Source) with bounds checks (runtime/metal_bounds.h):
// every subscript of a name in `names` (the buffers, by slot) or of a
// threadgroup array the body declares (appended to `names`) checks its index.
// With `races`, each access to such an array also goes through
// runtime/metal_race.h's race_access (KernelSpec::race_check). With
// `names_only`, the body's threadgroup arrays are left unchecked
// (KernelSpec::tolerate_input_reads, `names` then the inputs).
int rewrite_checked_body(const LexedText& text, const std::set<std::string>& user_names, Writer& w,
                         KernelSpec::ThreadgroupStorage storage, std::vector<std::string>& names,
                         const CpuThreadsPlan* threads = nullptr, const std::set<std::string>* macros = nullptr,
                         bool races = false, bool names_only = false);

}  // namespace alloy::msl
