// analyze() for translate(), on the texts it has already lexed.
#pragma once

#include "alloy/msl/translate.h"
#include "msl/lexer.h"

namespace alloy::msl {

Analysis analyze(const KernelSpec& spec, const LexedKernel& lexed);

}  // namespace alloy::msl
