// The C++ that Metal leaves out and that g++ or NVRTC would take and run:
// `double`, `goto`, virtual functions, run-time type information, `new` and
// `delete`, exceptions. A kernel written on Linux must fail here as it would
// on a Mac, naming the line, rather than run with double precision or a
// jump that Apple's compiler refuses.
#pragma once

#include "msl/lexer.h"

namespace alloy::msl {

// Throws CompileError quoting the first use in `text` of a C++ feature
// Metal does not have (MSL specification, "Metal and C++"). Code inside
// `#if` blocks is not checked (a branch the preprocessor drops may hold
// anything), nor are macro definitions or what they expand to (`#define
// REAL double` then `REAL x;` passes: the host compiler expands it).
void check_language_rules(const LexedText& text);

// Every check on the user's own texts that needs no translation: brackets,
// where variables live (storage_rules.h) and the language above.
// `source_at_program_scope`: the source is a whole program (metal_library)
// rather than a kernel body.
void check_user_texts(const LexedKernel& lexed, bool source_at_program_scope);

}  // namespace alloy::msl
