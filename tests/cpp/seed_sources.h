// The seeds' kernel bodies, read from examples/seeds/ for C++ tests.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

namespace alloy::fast::test {

// The seed's grid_sample kernel body (examples/seeds/grid_sample.py), whose
// corner loads go outside `x` for a grid past the image's edge; "" if the
// file is not found.
inline std::string seed_grid_sample_body() {
  std::ifstream in(std::string(ALLOY_SOURCE_DIR) + "/examples/seeds/grid_sample.py");
  std::stringstream text;
  text << in.rdbuf();
  const std::string s = text.str();
  const size_t open = s.find("source = \"\"\"");
  const size_t close = s.find("\"\"\"", open + 12);
  if (open == std::string::npos || close == std::string::npos) return "";
  return s.substr(open + 12, close - open - 12);
}

}  // namespace alloy::fast::test
