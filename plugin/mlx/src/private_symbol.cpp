// find_private_symbol: reads the symbol table of a loaded library's file.
#include "private_symbol.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

namespace alloy::mlx {

namespace {

// The file mapped read-only for the duration of one lookup.
class MappedFile {
 public:
  explicit MappedFile(const char* path) {
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st {};
    if (fstat(fd, &st) == 0 && st.st_size > 0) {
      void* p = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
      if (p != MAP_FAILED) {
        data_ = static_cast<const unsigned char*>(p);
        size_ = static_cast<size_t>(st.st_size);
      }
    }
    close(fd);
  }
  ~MappedFile() {
    if (data_) munmap(const_cast<unsigned char*>(data_), size_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  // A pointer to `count` objects of T at `offset`, or nullptr if they do not fit in the file.
  template <class T>
  const T* at(uint64_t offset, uint64_t count = 1) const {
    if (!data_ || offset > size_ || count > (size_ - offset) / sizeof(T)) return nullptr;
    return reinterpret_cast<const T*>(data_ + offset);
  }

 private:
  const unsigned char* data_ = nullptr;
  size_t size_ = 0;
};

// The symbol's value (an offset from the library's load address), or 0.
uint64_t symbol_value(const MappedFile& file, std::string_view name) {
  const auto* eh = file.at<Elf64_Ehdr>(0);
  if (!eh || std::memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64) return 0;
  const auto* sections = file.at<Elf64_Shdr>(eh->e_shoff, eh->e_shnum);
  if (!sections || eh->e_shentsize != sizeof(Elf64_Shdr)) return 0;
  for (unsigned s = 0; s < eh->e_shnum; ++s) {
    const Elf64_Shdr& table = sections[s];
    if (table.sh_type != SHT_SYMTAB || table.sh_entsize != sizeof(Elf64_Sym) || table.sh_link >= eh->e_shnum) continue;
    const Elf64_Shdr& strings = sections[table.sh_link];
    const auto* names = file.at<char>(strings.sh_offset, strings.sh_size);
    const auto* symbols = file.at<Elf64_Sym>(table.sh_offset, table.sh_size / sizeof(Elf64_Sym));
    if (!names || !symbols) return 0;
    for (uint64_t i = 0; i < table.sh_size / sizeof(Elf64_Sym); ++i) {
      const Elf64_Sym& sym = symbols[i];
      if (sym.st_shndx == SHN_UNDEF || sym.st_name >= strings.sh_size || sym.st_value == 0) continue;
      const int type = ELF64_ST_TYPE(sym.st_info);
      if (type != STT_FUNC && type != STT_OBJECT) continue;
      const char* n = names + sym.st_name;
      // The name ends inside the string table (strnlen), and is the one asked for.
      if (strnlen(n, strings.sh_size - sym.st_name) == name.size() && std::memcmp(n, name.data(), name.size()) == 0) {
        return sym.st_value;
      }
    }
  }
  return 0;
}

}  // namespace

void* find_private_symbol(const void* anchor, std::string_view mangled_name) {
  Dl_info info{};
  link_map* map = nullptr;
  if (!dladdr1(anchor, &info, reinterpret_cast<void**>(&map), RTLD_DL_LINKMAP) || !info.dli_fname || !map) {
    return nullptr;
  }
  const MappedFile file(info.dli_fname);
  // The anchor's own entry must give the anchor's address: the file is the
  // image loaded (not one replaced on disk since) and the arithmetic holds.
  if (!info.dli_sname || !info.dli_saddr ||
      map->l_addr + symbol_value(file, info.dli_sname) != reinterpret_cast<uintptr_t>(info.dli_saddr)) {
    return nullptr;
  }
  const uint64_t value = symbol_value(file, mangled_name);
  return value ? reinterpret_cast<void*>(map->l_addr + value) : nullptr;
}

}  // namespace alloy::mlx
