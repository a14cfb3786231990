#include "msl/includes.h"

#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "alloy/msl/program.h"
#include "msl/source_text.h"

namespace alloy::msl {
namespace {

constexpr std::string_view kPrefix = "mlx/backend/metal/kernels/";

// utils.h and the files it includes: what MLX puts before every kernel.
constexpr std::string_view kPrepended[] = {"utils.h", "bf16.h", "bf16_math.h", "complex.h", "defines.h",
                                           "logging.h"};

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return std::nullopt;
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

class Resolver {
 public:
  explicit Resolver(const char* dir) : dir_(dir ? dir : "") {}

  void visit(const LexedText& text) {
    for (const Token& t : text.tokens) {
      if (t.kind != TokenKind::Directive) continue;
      std::optional<std::string> path = mlx_include_path(t);
      if (!path || provided_by_runtime(*path) || !seen_.insert(*path).second) continue;
      std::optional<std::string> content = dir_.empty() ? std::nullopt : read_file(dir_ + "/" + *path);
      if (!content) {
        std::string why = dir_.empty()
                              ? "cannot include '" + *path + "': no installed mlx package was found " +
                                    "(install mlx, or set ALLOY_MLX_INCLUDE to the directory holding mlx/)"
                              : "cannot include '" + *path + "': no such file under ALLOY_MLX_INCLUDE=" + dir_;
        throw_compile_error("msl::translate", text.file, text.text, t.line, t.col, why);
      }
      // Function constants an MLX header declares for its own pipelines get
      // no value from a metal_kernel (as on Metal): T(), and undefined.
      if (content->find("function_constant") != std::string::npos)
        content = specialize_included_function_constants(*content, *path, declared_constants_);
      IncludedFile f;
      f.path = *path;
      f.text = std::make_unique<std::string>(std::move(*content));
      f.lexed = lex_text(*f.text, f.path);
      visit(f.lexed);  // its own includes go first
      files_.push_back(std::move(f));
    }
  }

  std::vector<IncludedFile> take() { return std::move(files_); }

 private:
  std::string dir_;
  std::set<std::string> seen_;
  std::vector<IncludedFile> files_;
  std::map<std::string, bool> declared_constants_;  // by the files read so far
};

}  // namespace

std::optional<std::string> mlx_include_path(const Token& directive) {
  if (directive.kind != TokenKind::Directive || directive_name(directive) != "include") return std::nullopt;
  const std::string& d = directive.text;
  std::size_t open = d.find_first_of("\"<", d.find("include") + 7);
  if (open == std::string::npos) return std::nullopt;
  std::size_t close = d.find(d[open] == '"' ? '"' : '>', open + 1);
  if (close == std::string::npos) return std::nullopt;
  std::string path = d.substr(open + 1, close - open - 1);
  if (path.compare(0, kPrefix.size(), kPrefix) != 0 || path.find("..") != std::string::npos) return std::nullopt;
  return path;
}

bool provided_by_runtime(const std::string& path) {
  std::string_view rest = std::string_view(path).substr(kPrefix.size());
  for (std::string_view p : kPrepended)
    if (rest == p) return true;
  return false;
}

std::vector<IncludedFile> resolve_mlx_includes(const std::vector<const LexedText*>& texts) {
  Resolver r(std::getenv("ALLOY_MLX_INCLUDE"));
  for (const LexedText* t : texts) r.visit(*t);
  return r.take();
}

}  // namespace alloy::msl
