# Writes OUT: a C++ file defining alloy::embedded_headers(), the text of FILES,
# alloy::embedded_headers_digest(), their SHA-256, and alloy::front_end_digest(),
# the SHA-256 of them and the files in DIGEST_ONLY (the MSL front end).
set(body "#include <string_view>\n#include <utility>\n#include <vector>\nnamespace alloy {\nconst std::vector<std::pair<std::string_view, std::string_view>>& embedded_headers() {\n  static const std::vector<std::pair<std::string_view, std::string_view>> h = {\n")
string(REPLACE "|" ";" FILES "${FILES}")
set(all "")
foreach(f ${FILES})
  get_filename_component(name ${f} NAME)
  file(READ ${f} text)
  # Raw strings are limited in length by some compilers: split in chunks.
  string(LENGTH "${text}" len)
  set(pieces "")
  set(pos 0)
  while(pos LESS len)
    string(SUBSTRING "${text}" ${pos} 8000 chunk)
    string(APPEND pieces "R\"ALLOY_EMBED(${chunk})ALLOY_EMBED\"\n")
    math(EXPR pos "${pos} + 8000")
  endwhile()
  if(pieces STREQUAL "")
    set(pieces "\"\"")
  endif()
  string(APPEND body "    {\"${name}\", ${pieces}},\n")
  string(APPEND all "${name}=${len}:${text}\n")
endforeach()
string(APPEND body "  };\n  return h;\n}\n")
# The digest is taken here, from the same text in the same run, so it cannot
# disagree with the embedded headers. At run time a cache hit then needs no
# pass over the quarter megabyte (0.4 ms of page faults and copying).
string(SHA256 digest "${all}")
string(APPEND body "const char* embedded_headers_digest() { return \"${digest}\"; }\n")
# The front end's sources with the headers: what a translation depends on.
string(REPLACE "|" ";" DIGEST_ONLY "${DIGEST_ONLY}")
foreach(f ${DIGEST_ONLY})
  get_filename_component(name ${f} NAME)
  file(READ ${f} text)
  string(LENGTH "${text}" len)
  string(APPEND all "${name}=${len}:${text}\n")
endforeach()
string(SHA256 front_end "${all}")
string(APPEND body "const char* front_end_digest() { return \"${front_end}\"; }\n}  // namespace alloy\n")
file(WRITE ${OUT}.tmp "${body}")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
