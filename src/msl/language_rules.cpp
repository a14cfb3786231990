#include "msl/language_rules.h"

#include <algorithm>
#include <string>

#include "msl/rewrite.h"
#include "msl/source_text.h"
#include "msl/storage_rules.h"

namespace alloy::msl {
namespace {

constexpr std::string_view kWhere = "msl::translate";

struct Refused {
  const char* word;
  const char* why;
};

// Keywords C++ has and Metal does not, with what to write instead.
constexpr Refused kRefused[] = {
    {"double", "Metal has no 'double' type: use float (or keep the value on the host)"},
    {"goto", "Metal has no 'goto': use a loop with break/continue, or a flag"},
    {"virtual", "Metal has no virtual functions: use templates or a switch on a tag"},
    {"typeid", "Metal has no run-time type information ('typeid')"},
    {"dynamic_cast", "Metal has no run-time type information ('dynamic_cast'): use static_cast"},
    {"new", "Metal has no 'new': declare the object as a local, threadgroup or device variable"},
    {"delete", "Metal has no 'delete': objects live in their scope or buffer"},
    {"try", "Metal has no exceptions ('try')"},
    {"catch", "Metal has no exceptions ('catch')"},
    {"throw", "Metal has no exceptions ('throw')"},
};

const Refused* refused(const Token& t) {
  if (t.kind != TokenKind::Identifier) return nullptr;
  for (const Refused& r : kRefused)
    if (t.text == r.word) return &r;
  return nullptr;
}

}  // namespace

void check_language_rules(const LexedText& text) {
  int conditionals = 0;
  const Token* previous = nullptr;
  for (const Token& t : text.tokens) {
    if (t.kind == TokenKind::Directive) {
      conditionals = std::max(0, conditionals + conditional_nesting(t));
      continue;
    }
    const Token* before = previous;
    previous = &t;
    if (conditionals > 0) continue;
    const Refused* r = refused(t);
    if (!r) continue;
    // `= delete` removes a function (C++11, as MLX's headers write it);
    // `operator new` declares one, which Metal's compiler would refuse at
    // its first use instead.
    if (before && ((before->is_punct("=") && t.is_ident("delete")) ||
                   (before->is_ident("operator") && (t.is_ident("delete") || t.is_ident("new")))))
      continue;
    throw_compile_error(kWhere, text.file, text.text, t.line, t.col, r->why);
  }
}

void check_user_texts(const LexedKernel& lexed, bool source_at_program_scope) {
  for (const LexedText* text : {&lexed.header, &lexed.source}) {
    check_brackets(*text);
    check_storage_rules(*text, /*at_program_scope=*/text == &lexed.header || source_at_program_scope);
    check_language_rules(*text);
  }
}

}  // namespace alloy::msl
