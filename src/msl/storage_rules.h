// Metal's rules on where variables live, which C++ would accept and which
// would then share state between threads and between launches: a variable
// at program scope must be in the constant address space (or constexpr or
// const), a function's `static` variable must be constant too, and there is
// no thread_local.
#pragma once

#include "msl/lexer.h"

namespace alloy::msl {

// Throws CompileError quoting the first mutable program-scope variable
// (`at_program_scope`: the header, or a whole program's source), mutable
// function-scope `static` or `thread_local` in `text`. Code inside `#if`
// blocks is not checked (a branch the preprocessor drops may be anything).
void check_storage_rules(const LexedText& text, bool at_program_scope);

}  // namespace alloy::msl
