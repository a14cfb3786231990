// The runtime headers (src/msl/runtime/*.h, ...) embedded into the library at
// build time (cmake/embed.cmake generates the definition), and their copy on
// disk for the host compiler's -I.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace alloy {
// (file name, contents) of every embedded header.
const std::vector<std::pair<std::string_view, std::string_view>>& embedded_headers();
// SHA-256 (hex) of every embedded header's name and contents, taken at build time.
const char* embedded_headers_digest();
// SHA-256 (hex) of those headers and the MSL front end's sources, taken at
// build time: a translation made by another front end is never reused.
const char* front_end_digest();
}  // namespace alloy

namespace alloy::jit {

// A directory holding the embedded headers: <base>/runtime-<hash prefix>, written
// once (into a temporary directory, then renamed) and reused by every process
// with the same headers. `base` empty: a directory under $TMPDIR or /tmp.
// Throws std::runtime_error when it cannot be written.
std::filesystem::path runtime_include_dir(const std::filesystem::path& base);

}  // namespace alloy::jit
