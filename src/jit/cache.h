// Content-addressed cache of compiled kernels (shared object bytes for the CPU,
// cubins for CUDA): a process-wide memory map in front of a disk directory.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace alloy::jit {

class Cache {
 public:
  using Bytes = std::shared_ptr<const std::string>;
  // A file stored beside an entry (the generated source, ...): <key><suffix>.
  struct SideFile {
    std::string suffix;
    std::string content;
  };
  // Produces an entry's payload on a miss; may add side files.
  using Builder = std::function<std::string(std::vector<SideFile>& side_files)>;

  // `dir` empty: memory only. The directory is created here, mode 0700. A
  // directory another user owns, or one group or others may write, is not
  // used: a warning names it and entries go to a private directory instead
  // (see trust rules in cache.cpp).
  explicit Cache(std::filesystem::path dir);

  // The process-wide cache in default_dir(), or memory only when
  // $ALLOY_CACHE_DIR is set to the empty string.
  static Cache& global();
  // $ALLOY_CACHE_DIR, else $XDG_CACHE_HOME/alloy, else $HOME/.cache/alloy.
  static std::filesystem::path default_dir();

  // The payload for `key` (a hex digest of everything that determines it):
  // from memory, else from disk (checksum verified), else from build(). build
  // runs once per key even when several threads ask at once; they all get its
  // result or its exception (a failed build is not remembered). A truncated or
  // corrupt disk entry counts as a miss and is replaced. Disk write failures
  // are ignored (the entry stays in memory).
  Bytes get_or_build(const std::string& key, const Builder& build);

  // The payload for `key` from memory or disk, or null: for entries whose
  // builder is not at hand where they are looked up (put() stores them).
  Bytes find(const std::string& key);
  // Stores `payload` under `key` in memory and on disk (disk failures ignored).
  void put(const std::string& key, std::string payload);

  const std::filesystem::path& dir() const { return dir_; }
  std::filesystem::path entry_path(const std::string& key) const;
  std::filesystem::path side_path(const std::string& key, const std::string& suffix) const;

  // Forgets the memory map (the next lookup reads the disk): for tests.
  void clear_memory();

  struct Stats {
    size_t memory_hits = 0, disk_hits = 0, builds = 0, corrupt_entries = 0;
    size_t untrusted_entries = 0;  // on disk but owned by another user or writable by group/others
  };
  Stats stats() const;

 private:
  Bytes load_entry(const std::string& key);
  void store_entry(const std::string& key, const std::string& payload, const std::vector<SideFile>& side_files);

  std::filesystem::path dir_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::shared_future<Bytes>> memory_;
  Stats stats_;
};

// Whether a file or directory may be trusted with code this process will
// run: owned by this user and writable by nobody else. Empty when it may;
// else why not ("owned by uid 1001", "writable by group or others").
std::string why_untrusted(const std::filesystem::path& path);

// A fresh directory only this user can enter (mode 0700), under $TMPDIR or
// /tmp; empty on failure.
std::filesystem::path make_private_temp_dir(const std::string& prefix);

// Writes `content` to `path` through a temporary file in the same directory
// and a rename, so readers see the old file or the whole new one. Returns
// false on failure.
bool write_file_atomically(const std::filesystem::path& path, const std::string& content);

}  // namespace alloy::jit
