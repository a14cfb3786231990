// An archive of kernels compiled ahead of time: GPU images (cubins for given
// architectures, or PTX) indexed by the digest of the source they were
// compiled from. The build writes one for the op kernels; at run time a
// kernel whose generated source has an image here needs no NVRTC.
//
// Layout (a text index, then the images in zstd-compressed blocks):
//   ALLOY-AOT 2
//   fingerprint <text without spaces>
//   blocks <b>
//   <offset> <compressed size> <size>                                    (b lines)
//   entries <n>
//   <source digest> <sm> <cubin|ptx> <block> <offset> <size> <checksum> <key>   (n lines)
//   data
//   <compressed blocks>
// `sm` is major*10+minor. Block offsets count from the byte after "data\n";
// an image's offset counts within its block once decompressed. A block is
// decompressed only as far as the images asked for reach. The checksum
// is the digest of the image. Images are compressed in blocks of about 2 MB
// rather than one by one because the cubins of one kernel family are nearly
// alike: 57 MB of sm_90 op kernels become about 3 MB (one by one: 18 MB).
// The fingerprint names everything besides the source that decides the code
// (headers, compiler options): an archive made for other headers is not used.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace alloy::jit {

struct AotImage {
  std::string bytes;
  int sm = 0;
  bool ptx = false;
};

class AotArchive {
 public:
  ~AotArchive();
  AotArchive(const AotArchive&) = delete;
  AotArchive& operator=(const AotArchive&) = delete;

  // Reads the archive at `path`. Returns null and sets `why` when the file
  // is missing, malformed, truncated, or its fingerprint is not
  // `fingerprint`.
  static std::unique_ptr<AotArchive> open(const std::string& path, std::string_view fingerprint, std::string* why);

  // The image to load for the source with digest `source_digest` on a device
  // of architecture `sm`: its own cubin, else the newest cubin of the same
  // major version not newer than the device (binary compatible), else the
  // newest PTX not newer than the device (the driver compiles it). Each
  // image's checksum is verified; a damaged one is passed over for the next.
  std::optional<AotImage> find(std::string_view source_digest, int sm) const;

  size_t entries() const { return count_; }
  // The architectures with cubins, ascending, and those with PTX.
  const std::vector<int>& cubin_archs() const { return cubin_archs_; }
  const std::vector<int>& ptx_archs() const { return ptx_archs_; }

 private:
  struct Entry {
    int sm;
    bool ptx;
    uint64_t block, offset, size;
    std::string checksum;
  };
  struct Block {
    uint64_t offset, compressed, size;
  };
  // A block as far as it has been decompressed: a process's first kernels
  // each touch another block, and decompressing all of a 2 MB block for one
  // image of 10-20 KB was most of what the archive cost a cold start.
  struct Decoded;
  // The bytes of `e`, decompressing its block only as far as they reach (the
  // last few blocks used are kept, with what is decompressed so far); null
  // when the block does not decompress.
  std::optional<std::string> image_bytes(const Entry& e) const;
  AotArchive() = default;

  // The file, mapped read-only: images are paged in only when loaded.
  const char* map_ = nullptr;
  size_t map_size_ = 0;
  size_t images_start_ = 0;  // offset of the first image in the mapping
  size_t count_ = 0;
  std::unordered_map<std::string, std::vector<Entry>> by_digest_;
  std::vector<Block> blocks_;
  mutable std::mutex mutex_;
  mutable std::vector<std::pair<uint64_t, std::unique_ptr<Decoded>>> recent_;  // most recent last
  std::vector<int> cubin_archs_, ptx_archs_;
};

// Writes an archive (used by the build's tool).
class AotArchiveWriter {
 public:
  void add(const std::string& key, const std::string& source_digest, int sm, bool ptx, std::string image);
  // Writes to `path` (through a temporary file, renamed). Throws on failure.
  void write(const std::string& path, std::string_view fingerprint) const;
  size_t size() const { return items_.size(); }

 private:
  struct Item {
    std::string key, source_digest;
    int sm;
    bool ptx;
    std::string image;
  };
  std::vector<Item> items_;
};

}  // namespace alloy::jit
