#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

#include "jit/cache.h"
#include "jit/embedded_headers.h"

namespace alloy::jit {

std::filesystem::path runtime_include_dir(const std::filesystem::path& base_in) {
  static std::mutex mutex;
  static std::unordered_map<std::string, std::filesystem::path> done;
  std::filesystem::path base = base_in;
  if (base.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    base = std::filesystem::path(tmp && *tmp ? tmp : "/tmp") / ("alloy-" + std::to_string(getuid()));
  }
  std::lock_guard<std::mutex> lock(mutex);
  auto it = done.find(base.string());
  if (it != done.end()) return it->second;

  std::filesystem::path dir = base / ("runtime-" + std::string(embedded_headers_digest(), 16));
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    // Fill a private directory, then rename it into place: another process
    // either sees no directory or a complete one.
    std::filesystem::path tmp = base / (".tmp-runtime-" + std::to_string(getpid()) + "-" + std::string(embedded_headers_digest(), 8));
    std::filesystem::remove_all(tmp, ec);
    std::filesystem::create_directories(tmp, ec);
    for (const auto& [name, text] : embedded_headers()) {
      if (!write_file_atomically(tmp / std::string(name), std::string(text))) {
        throw std::runtime_error("[alloy::jit::runtime_include_dir] cannot write the runtime header " + std::string(name) +
                                 " into " + tmp.string());
      }
    }
    std::filesystem::rename(tmp, dir, ec);
    if (ec) {
      std::filesystem::remove_all(tmp, ec);  // lost the race: the other copy is identical
      if (!std::filesystem::is_directory(dir, ec)) {
        throw std::runtime_error("[alloy::jit::runtime_include_dir] cannot create " + dir.string());
      }
    }
  }
  done.emplace(base.string(), dir);
  return dir;
}

}  // namespace alloy::jit
