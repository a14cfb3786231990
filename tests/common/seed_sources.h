// The seed documents' kernel bodies, read from the seed examples themselves
// (examples/seeds/*.py, MLX code with only the import changed), so the C++
// tests translate and compile exactly what the Python examples run.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace alloy_test {

// The checkout whose data files (examples/seeds, tests/msl/golden) the tests
// read: $ALLOY_SOURCE_DIR, else the first folder up from the working
// directory that holds them (a test binary run from another checkout, or on
// the GPU machine), else the checkout the binary was built from.
inline std::string source_root() {
  static const std::string root = [] {
    namespace fs = std::filesystem;
    if (const char* env = std::getenv("ALLOY_SOURCE_DIR"); env && *env) return std::string(env);
    std::error_code ec;
    for (fs::path p = fs::current_path(ec); !ec && !p.empty(); p = p.parent_path()) {
      if (fs::is_directory(p / "examples" / "seeds", ec) && fs::is_directory(p / "tests" / "msl", ec)) return p.string();
      if (p == p.parent_path()) break;
    }
    return std::string(ALLOY_SOURCE_DIR);
  }();
  return root;
}

// The `index`-th `source = """..."""` block of examples/seeds/<file>.
inline std::string seed_source(const std::string& file, int index = 0) {
  const std::string path = source_root() + "/examples/seeds/" + file;
  std::ifstream in(path);
  if (!in) {
    throw std::runtime_error("seed_source: cannot read " + path +
                             " (run the tests from a checkout, or set ALLOY_SOURCE_DIR to one)");
  }
  std::stringstream text;
  text << in.rdbuf();
  const std::string s = text.str(), open = "source = \"\"\"", close = "\"\"\"";
  size_t at = 0;
  for (int i = 0; i <= index; ++i) {
    at = s.find(open, at);
    if (at == std::string::npos) throw std::runtime_error("seed_source: " + path + " has no source block " + std::to_string(index));
    at += open.size();
  }
  size_t end = s.find(close, at);
  if (end == std::string::npos) throw std::runtime_error("seed_source: unterminated source block in " + path);
  std::string body = s.substr(at, end - at);
  // A Python string literal: the bodies use no escapes, and must not start to.
  if (body.find('\\') != std::string::npos) throw std::runtime_error("seed_source: escapes in " + path);
  return body;
}

}  // namespace alloy_test
