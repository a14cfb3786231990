// The ahead-of-time kernel archive: what the writer stores the reader finds;
// which image a device of a given architecture gets (its own cubin, an older
// cubin of the same major version, else PTX, never a cubin of an older
// major); that a damaged image is passed over; and that a missing, foreign, truncated or corrupted archive is
// refused. A block is decompressed only as far as the images asked for
// reach: images of one block come back right in any order, and damage late
// in a block leaves its earlier images readable.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include "jit/aot_archive.h"
#include "jit/digest.h"

namespace alloy::jit {
namespace {

std::filesystem::path temp_file(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("alloy_aot_test_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  return dir / name;
}

std::string random_bytes(std::mt19937& rng, size_t n) {
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng() & 0xff);
  return s;
}

struct AotArchiveTest : ::testing::Test {
  std::mt19937 rng{std::random_device{}()};
  std::string a_src = "kernel a", b_src = "kernel b";
  std::string a80, a86, a90, a_ptx90, b100;
  std::string path = temp_file("archive.aot").string();

  void SetUp() override {
    a80 = random_bytes(rng, 1000);
    a86 = random_bytes(rng, 1200);
    // Larger than a block: a90 is compressed on its own, so damage to it
    // leaves the other images readable.
    a90 = random_bytes(rng, size_t(5) << 19);
    a_ptx90 = "// PTX for compute_90\n.version 8.0\n";
    b100 = random_bytes(rng, 700);
    AotArchiveWriter w;
    w.add("fam/a/k", digest_hex(a_src), 80, false, a80);
    w.add("fam/a/k", digest_hex(a_src), 86, false, a86);
    w.add("fam/a/k", digest_hex(a_src), 90, false, a90);
    w.add("fam/a/k", digest_hex(a_src), 90, true, a_ptx90);
    w.add("fam/b/k", digest_hex(b_src), 100, false, b100);
    w.write(path, "fp-1");
  }
};

TEST_F(AotArchiveTest, FindsEachImageByArchitecture) {
  std::string why;
  auto ar = AotArchive::open(path, "fp-1", &why);
  ASSERT_TRUE(ar) << why;
  EXPECT_EQ(ar->entries(), 5u);
  EXPECT_EQ(ar->cubin_archs(), (std::vector<int>{80, 86, 90, 100}));
  EXPECT_EQ(ar->ptx_archs(), (std::vector<int>{90}));
  const std::string a = digest_hex(a_src);
  // Exact cubins.
  EXPECT_EQ(ar->find(a, 80)->bytes, a80);
  EXPECT_EQ(ar->find(a, 86)->bytes, a86);
  EXPECT_EQ(ar->find(a, 90)->bytes, a90);
  // sm_89 runs the newest sm_8x cubin not newer than itself.
  auto img = ar->find(a, 89);
  ASSERT_TRUE(img);
  EXPECT_EQ(img->sm, 86);
  EXPECT_EQ(img->bytes, a86);
  EXPECT_FALSE(img->ptx);
  // sm_100 and sm_120: no cubin of their major version; the PTX of compute_90.
  for (int sm : {100, 120}) {
    img = ar->find(a, sm);
    ASSERT_TRUE(img) << sm;
    EXPECT_TRUE(img->ptx);
    EXPECT_EQ(img->bytes, a_ptx90);
  }
  // Older than every image: nothing.
  EXPECT_FALSE(ar->find(a, 75));
  // b has only an sm_100 cubin: not for sm_90, not for sm_120 (other major).
  const std::string b = digest_hex(b_src);
  EXPECT_EQ(ar->find(b, 100)->bytes, b100);
  EXPECT_EQ(ar->find(b, 103)->bytes, b100);
  EXPECT_FALSE(ar->find(b, 90));
  EXPECT_FALSE(ar->find(b, 120));
  // A source the archive does not hold.
  EXPECT_FALSE(ar->find(digest_hex("kernel c"), 90));
}

TEST_F(AotArchiveTest, RefusesAnotherFingerprint) {
  std::string why;
  EXPECT_FALSE(AotArchive::open(path, "fp-2", &why));
  EXPECT_NE(why.find("fingerprint"), std::string::npos) << why;
  EXPECT_NE(why.find(path), std::string::npos) << why;
}

TEST_F(AotArchiveTest, RefusesMissingAndForeignFiles) {
  std::string why;
  EXPECT_FALSE(AotArchive::open(temp_file("absent.aot").string(), "fp-1", &why));
  EXPECT_NE(why.find("cannot be opened"), std::string::npos) << why;
  const std::string other = temp_file("other.aot").string();
  std::ofstream(other) << "not an archive\n";
  EXPECT_FALSE(AotArchive::open(other, "fp-1", &why));
  EXPECT_NE(why.find("not an Alloy kernel archive"), std::string::npos) << why;
}

TEST_F(AotArchiveTest, RefusesTruncatedArchive) {
  const auto size = std::filesystem::file_size(path);
  std::filesystem::resize_file(path, size - 10);
  std::string why;
  EXPECT_FALSE(AotArchive::open(path, "fp-1", &why));
  EXPECT_NE(why.find("truncated"), std::string::npos) << why;
}

TEST_F(AotArchiveTest, PassesOverADamagedImage) {
  // The file is mostly a90's block (random bytes do not compress): its middle
  // byte lies inside that block.
  const auto at = std::filesystem::file_size(path) / 2;
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(at));
    char c = 0;
    f.read(&c, 1);
    c = static_cast<char>(c ^ 0x5a);
    f.seekp(static_cast<std::streamoff>(at));
    f.write(&c, 1);
  }
  std::string why;
  auto ar = AotArchive::open(path, "fp-1", &why);
  ASSERT_TRUE(ar) << why;
  const std::string a = digest_hex(a_src);
  // The damaged sm_90 cubin is passed over for the next choice, the PTX.
  auto img = ar->find(a, 90);
  ASSERT_TRUE(img);
  EXPECT_TRUE(img->ptx);
  EXPECT_EQ(img->bytes, a_ptx90);
  EXPECT_EQ(ar->find(a, 86)->bytes, a86);  // the others stay usable
}

// Many small images that compress together, as an op family's cubins do:
// they share one block.
struct AotArchiveBlockTest : ::testing::Test {
  std::mt19937 rng{std::random_device{}()};
  std::vector<std::string> sources, images;
  std::string path = temp_file("block.aot").string();

  void SetUp() override {
    const std::string common = random_bytes(rng, 4096);
    for (int i = 0; i < 120; ++i) {
      sources.push_back("kernel " + std::to_string(i));
      // A shared part, a part of its own, the shared part again.
      images.push_back(common + random_bytes(rng, 1000 + 37 * i) + common);
    }
    AotArchiveWriter w;
    for (size_t i = 0; i < images.size(); ++i) w.add("fam/k" + std::to_string(i), digest_hex(sources[i]), 90, false, images[i]);
    w.write(path, "fp-1");
  }
};

TEST_F(AotArchiveBlockTest, ImagesOfOneBlockInAnyOrder) {
  std::string why;
  auto ar = AotArchive::open(path, "fp-1", &why);
  ASSERT_TRUE(ar) << why;
  // Last first (the whole block), then the rest shuffled.
  std::vector<size_t> order(images.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = order.size() - 1 - i;
  std::shuffle(order.begin() + 1, order.end(), rng);
  for (size_t i : order) {
    auto img = ar->find(digest_hex(sources[i]), 90);
    ASSERT_TRUE(img) << i;
    EXPECT_EQ(img->bytes, images[i]) << i;
  }
  // A fresh reader from the front, a few at a time (each step decompresses a little further).
  auto again = AotArchive::open(path, "fp-1", &why);
  ASSERT_TRUE(again) << why;
  auto check = [&](size_t i) {
    auto img = again->find(digest_hex(sources[i]), 90);
    ASSERT_TRUE(img) << i;
    EXPECT_EQ(img->bytes, images[i]) << i;
  };
  for (size_t i = 0; i < images.size(); i += 7) check(i);
  for (size_t i = images.size(); i-- > 0;) check(i);
}

TEST_F(AotArchiveBlockTest, DamageLateInABlockLeavesItsEarlyImages) {
  const std::string text = [&] {
    std::ifstream f(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  }();
  const size_t data = text.find("\ndata\n") + 6;
  ASSERT_LT(data, text.size());
  const size_t at = data + (text.size() - data) * 9 / 10;  // in the last tenth of the one block
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(at));
    const char c = static_cast<char>(text[at] ^ 0x5a);
    f.write(&c, 1);
  }
  std::string why;
  auto ar = AotArchive::open(path, "fp-1", &why);
  ASSERT_TRUE(ar) << why;
  for (size_t i : {size_t(0), size_t(5)}) {
    auto img = ar->find(digest_hex(sources[i]), 90);
    ASSERT_TRUE(img) << i;
    EXPECT_EQ(img->bytes, images[i]) << i;
  }
  // The last image lies past the damage: it never comes back wrong.
  auto last = ar->find(digest_hex(sources.back()), 90);
  EXPECT_TRUE(!last || last->bytes == images.back());
}

}  // namespace
}  // namespace alloy::jit
