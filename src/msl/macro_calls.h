// Function-like macros and their calls, written out as the preprocessor
// would but on the call's own line (so later lines keep their numbers):
// the CPU's synchronising macros of a kernel's header (cpu_inline_macros.h)
// and a whole program's macros that write kernels (program.h's
// expand_kernel_macros). Parameters named (no `...`); the caller refuses
// bodies with `#` or `##`.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "msl/lexer.h"

namespace alloy::msl::macro_calls {

// A form these do not take: `why` says which.
struct NotTaken {
  std::string why;
};
void require(bool ok, const std::string& why);

struct Macro {
  std::string name;
  const Token* directive = nullptr;
  std::vector<std::string> params;
  std::vector<Token> body;  // lexed as the preprocessor sees it (`#` an operator, no comments)
};

// A function-like `#define` of `text`; nullopt for other directives and
// object-like macros.
std::optional<Macro> function_like(std::string_view text, const Token& d);

struct Call {
  const Macro* macro = nullptr;
  std::size_t name = 0, close = 0;                         // source tokens: the name, its `)`
  std::vector<std::pair<std::size_t, std::size_t>> args;  // each argument's tokens [b, e)
};

// The call at token `i` of `s`, a statement of its own (`NAME(args);` after
// `;`, `{`, `}` or a directive).
Call find_call(const std::vector<Token>& s, std::size_t i, const Macro& m);

// `text` (whose tokens `s` are) with each of `calls` (in token order, none
// inside another) replaced by the macro's body on the call's first line
// (each parameter the argument's text; with `do_while_as_block`, a body
// `do { X } while (0)` the block `{ X }`),
// followed by as many newlines as the call spanned: every later line keeps
// its number.
std::string expand_calls(std::string text, const std::vector<Token>& s, const std::vector<Call>& calls,
                        bool do_while_as_block);

}  // namespace alloy::msl::macro_calls
