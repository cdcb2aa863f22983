// plugins/cpu/elf_loader.cpp - a minimal static linker/loader for one relocatable x86-64 object.
//
// Steps: validate the header; choose the allocatable PROGBITS/NOBITS sections (unwind tables,
// notes and metadata are skipped: kernels never unwind); lay them out in one mapping as
// [code + call stubs] [read-only data + GOT] [writable data + bss + COMMON], each group
// page-aligned so it can be protected separately; resolve symbols (undefined ones with
// dlsym(RTLD_DEFAULT)); apply the x86-64 relocations; mprotect code to read+exec.
//
// External functions are reached through 16-byte stubs `jmp *0(%rip); .quad target` inside the
// mapping, because libc is usually more than 2 GiB away from an anonymous mapping and PC32/PLT32
// displacements are 32-bit. GOTPCREL* relocations use a small GOT in the read-only group.
#include <dlfcn.h>
#include <elf.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "image.hpp"
#include "kiln/sdk.hpp"

namespace kiln::cpu {
namespace {

[[noreturn]] void bad(const std::string& what) {
  throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT, "cannot load the kernel object: " + what};
}

uint64_t align_up(uint64_t v, uint64_t a) { return a > 1 ? (v + a - 1) / a * a : v; }

class ObjectImage final : public Image {
 public:
  ObjectImage(void* base, size_t size) : base_(base), size_(size) {}
  ~ObjectImage() override { munmap(base_, size_); }
  void* symbol(std::string_view name) const override {
    for (const auto& [n, a] : symbols_)
      if (n == name) return a;
    return nullptr;
  }
  std::vector<std::pair<std::string, void*>> symbols_;

 private:
  void* base_;
  size_t size_;
};

enum Group { kText, kRodata, kData, kNone };

constexpr uint64_t kStubSize = 16;
constexpr uint8_t kStubCode[6] = {0xff, 0x25, 0x00, 0x00, 0x00, 0x00};  // jmp *0(%rip)

struct Object {
  std::string_view file;
  Elf64_Ehdr eh{};
  std::vector<Elf64_Shdr> sh;
  std::vector<Elf64_Sym> syms;
  size_t symtab = 0;
  std::string_view strtab, shstrtab;

  std::string section_name(size_t i) const {
    if (sh[i].sh_name >= shstrtab.size()) return "#" + std::to_string(i);
    return std::string(shstrtab.substr(sh[i].sh_name).substr(0, shstrtab.substr(sh[i].sh_name).find('\0')));
  }
  std::string symbol_name(const Elf64_Sym& s) const {
    if (s.st_name >= strtab.size()) return "?";
    std::string_view rest = strtab.substr(s.st_name);
    return std::string(rest.substr(0, rest.find('\0')));
  }
  std::string_view contents(const Elf64_Shdr& s) const { return file.substr(s.sh_offset, s.sh_size); }

  void parse(std::string_view elf) {
    file = elf;
    if (elf.size() < sizeof(Elf64_Ehdr) || std::memcmp(elf.data(), ELFMAG, SELFMAG) != 0) bad("not an ELF file");
    std::memcpy(&eh, elf.data(), sizeof eh);
    if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_machine != EM_X86_64)
      bad("not a little-endian x86-64 ELF64 object");
    if (eh.e_type != ET_REL) bad("not a relocatable object (e_type " + std::to_string(eh.e_type) + ")");
    if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff > elf.size() ||
        uint64_t{eh.e_shnum} * sizeof(Elf64_Shdr) > elf.size() - eh.e_shoff)
      bad("truncated section header table");
    sh.resize(eh.e_shnum);
    std::memcpy(sh.data(), elf.data() + eh.e_shoff, sh.size() * sizeof(Elf64_Shdr));
    for (const Elf64_Shdr& s : sh)
      if (s.sh_type != SHT_NOBITS && (s.sh_offset > elf.size() || s.sh_size > elf.size() - s.sh_offset))
        bad("a section extends past the end of the file");
    if (eh.e_shstrndx < sh.size()) shstrtab = contents(sh[eh.e_shstrndx]);
    for (size_t i = 0; i < sh.size(); ++i)
      if (sh[i].sh_type == SHT_SYMTAB) symtab = i;
    if (!symtab) bad("no symbol table");
    const Elf64_Shdr& st = sh[symtab];
    if (st.sh_entsize != sizeof(Elf64_Sym) || st.sh_link >= sh.size()) bad("malformed symbol table");
    strtab = contents(sh[st.sh_link]);
    syms.resize(st.sh_size / sizeof(Elf64_Sym));
    std::memcpy(syms.data(), elf.data() + st.sh_offset, syms.size() * sizeof(Elf64_Sym));
  }

  Group group(size_t i) const {
    const Elf64_Shdr& s = sh[i];
    if (!(s.sh_flags & SHF_ALLOC) || s.sh_size == 0) return kNone;
    if (s.sh_flags & SHF_TLS) bad("thread-local variables are not supported in kernels (section " + section_name(i) + ")");
    if (s.sh_type == SHT_INIT_ARRAY || s.sh_type == SHT_FINI_ARRAY || s.sh_type == SHT_PREINIT_ARRAY)
      bad("constructors/destructors are not supported in kernels (section " + section_name(i) + ")");
    if (s.sh_type != SHT_PROGBITS && s.sh_type != SHT_NOBITS) return kNone;  // e.g. .eh_frame (X86_64_UNWIND)
    if (s.sh_flags & SHF_EXECINSTR) return kText;
    return (s.sh_flags & SHF_WRITE) ? kData : kRodata;
  }
};

bool is_got_reloc(uint32_t type) {
  return type == R_X86_64_GOTPCREL || type == R_X86_64_GOTPCRELX || type == R_X86_64_REX_GOTPCRELX;
}

}  // namespace

std::unique_ptr<Image> load_object(std::string_view elf) {
  Object o;
  o.parse(elf);
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const size_t n_sec = o.sh.size(), n_sym = o.syms.size();

  // Which symbols need a GOT slot or a call stub (only relocations into loaded sections count).
  std::vector<int64_t> got_slot(n_sym, -1), stub_slot(n_sym, -1);
  size_t n_got = 0, n_stub = 0;
  for (size_t r = 0; r < n_sec; ++r) {
    const Elf64_Shdr& rs = o.sh[r];
    if (rs.sh_type == SHT_REL && rs.sh_info < n_sec && o.group(rs.sh_info) != kNone)
      bad("REL relocations (without addends) are not supported");
    if (rs.sh_type != SHT_RELA || rs.sh_info >= n_sec || o.group(rs.sh_info) == kNone) continue;
    if (rs.sh_link != o.symtab || rs.sh_entsize != sizeof(Elf64_Rela)) bad("malformed relocation section " + o.section_name(r));
    for (size_t k = 0; k < rs.sh_size / sizeof(Elf64_Rela); ++k) {
      Elf64_Rela rel;
      std::memcpy(&rel, elf.data() + rs.sh_offset + k * sizeof rel, sizeof rel);
      uint32_t sym = ELF64_R_SYM(rel.r_info), type = ELF64_R_TYPE(rel.r_info);
      if (sym >= n_sym) bad("relocation names symbol " + std::to_string(sym) + " of " + std::to_string(n_sym));
      if (is_got_reloc(type) && got_slot[sym] < 0) got_slot[sym] = static_cast<int64_t>(n_got++);
      bool undefined = o.syms[sym].st_shndx == SHN_UNDEF && sym != 0;
      if ((type == R_X86_64_PLT32 || type == R_X86_64_PC32) && undefined && stub_slot[sym] < 0)
        stub_slot[sym] = static_cast<int64_t>(n_stub++);
    }
  }

  // Layout: offsets of sections, stubs, GOT and COMMON symbols inside one mapping.
  std::vector<uint64_t> offset(n_sec, 0);
  std::vector<uint64_t> common_offset(n_sym, 0);
  uint64_t at = 0, group_begin[3] = {0, 0, 0}, group_end[3] = {0, 0, 0}, stubs_at = 0, got_at = 0;
  for (int g = kText; g <= kData; ++g) {
    at = align_up(at, page);
    group_begin[g] = at;
    for (size_t i = 0; i < n_sec; ++i) {
      if (o.group(i) != g) continue;
      uint64_t a = std::max<uint64_t>(o.sh[i].sh_addralign, 1);
      if (a > page) bad("section " + o.section_name(i) + " needs alignment " + std::to_string(a));
      at = align_up(at, a);
      offset[i] = at;
      at += o.sh[i].sh_size;
    }
    if (g == kText) {
      at = align_up(at, kStubSize);
      stubs_at = at;
      at += n_stub * kStubSize;
    } else if (g == kRodata) {
      at = align_up(at, 8);
      got_at = at;
      at += n_got * 8;
    } else {
      for (size_t s = 0; s < n_sym; ++s) {
        if (o.syms[s].st_shndx != SHN_COMMON) continue;
        at = align_up(at, std::max<uint64_t>(o.syms[s].st_value, 1));  // st_value = alignment for COMMON
        common_offset[s] = at;
        at += o.syms[s].st_size;
      }
    }
    group_end[g] = at;
  }
  const uint64_t total = align_up(std::max<uint64_t>(at, 1), page);
  void* mem = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED)
    throw sdk::Error{KILN_STATUS_RESOURCE_EXHAUSTED, std::string("mapping the kernel: ") + std::strerror(errno)};
  auto image = std::make_unique<ObjectImage>(mem, total);  // unmaps on any error below
  auto* base = static_cast<uint8_t*>(mem);
  for (size_t i = 0; i < n_sec; ++i)
    if (o.group(i) != kNone && o.sh[i].sh_type == SHT_PROGBITS)
      std::memcpy(base + offset[i], elf.data() + o.sh[i].sh_offset, o.sh[i].sh_size);

  // Symbol addresses.
  std::vector<uint64_t> addr(n_sym, 0);
  std::vector<bool> usable(n_sym, true);
  std::string unresolved;
  for (size_t s = 1; s < n_sym; ++s) {
    const Elf64_Sym& sym = o.syms[s];
    if (sym.st_shndx == SHN_UNDEF) {
      std::string name = o.symbol_name(sym);
      void* p = name.empty() ? nullptr : dlsym(RTLD_DEFAULT, name.c_str());
      if (!p && ELF64_ST_BIND(sym.st_info) != STB_WEAK)
        unresolved += (unresolved.empty() ? "'" : ", '") + name + "'";
      addr[s] = reinterpret_cast<uint64_t>(p);
    } else if (sym.st_shndx == SHN_ABS) {
      addr[s] = sym.st_value;
    } else if (sym.st_shndx == SHN_COMMON) {
      addr[s] = reinterpret_cast<uint64_t>(base + common_offset[s]);
    } else if (sym.st_shndx < n_sec && o.group(sym.st_shndx) != kNone) {
      addr[s] = reinterpret_cast<uint64_t>(base + offset[sym.st_shndx]) + sym.st_value;
    } else {
      usable[s] = false;  // in a section we did not load (debug info, unwind tables)
    }
  }
  if (!unresolved.empty())
    bad("unresolved symbol " + unresolved +
        ": a kernel may call only functions the host process already has (libc, libm); define the function in the "
        "kernel source or check its spelling");

  // Stubs and GOT entries.
  for (size_t s = 0; s < n_sym; ++s) {
    if (stub_slot[s] >= 0) {
      uint8_t* stub = base + stubs_at + static_cast<uint64_t>(stub_slot[s]) * kStubSize;
      std::memcpy(stub, kStubCode, sizeof kStubCode);
      std::memcpy(stub + sizeof kStubCode, &addr[s], 8);
    }
    if (got_slot[s] >= 0) std::memcpy(base + got_at + static_cast<uint64_t>(got_slot[s]) * 8, &addr[s], 8);
  }

  // Relocations.
  for (size_t r = 0; r < n_sec; ++r) {
    const Elf64_Shdr& rs = o.sh[r];
    if (rs.sh_type != SHT_RELA || rs.sh_info >= n_sec || o.group(rs.sh_info) == kNone) continue;
    const Elf64_Shdr& target = o.sh[rs.sh_info];
    for (size_t k = 0; k < rs.sh_size / sizeof(Elf64_Rela); ++k) {
      Elf64_Rela rel;
      std::memcpy(&rel, elf.data() + rs.sh_offset + k * sizeof rel, sizeof rel);
      uint32_t sym = ELF64_R_SYM(rel.r_info), type = ELF64_R_TYPE(rel.r_info);
      if (type == R_X86_64_NONE) continue;
      if (!usable[sym]) bad("a relocation in " + o.section_name(rs.sh_info) + " refers to an unloaded section");
      const uint64_t width = (type == R_X86_64_64 || type == R_X86_64_PC64) ? 8 : 4;
      if (rel.r_offset > target.sh_size || width > target.sh_size - rel.r_offset)
        bad("a relocation lies outside section " + o.section_name(rs.sh_info));
      uint8_t* where = base + offset[rs.sh_info] + rel.r_offset;
      const int64_t P = static_cast<int64_t>(reinterpret_cast<uint64_t>(where));
      int64_t S = static_cast<int64_t>(addr[sym]);
      const int64_t A = rel.r_addend;
      int64_t value = 0;
      switch (type) {
        case R_X86_64_64: value = S + A; break;
        case R_X86_64_PC64: value = S + A - P; break;
        case R_X86_64_PC32:
        case R_X86_64_PLT32:
          if (stub_slot[sym] >= 0 && (type == R_X86_64_PLT32 || ELF64_ST_TYPE(o.syms[sym].st_info) != STT_OBJECT))
            S = static_cast<int64_t>(reinterpret_cast<uint64_t>(base + stubs_at + static_cast<uint64_t>(stub_slot[sym]) * kStubSize));
          value = S + A - P;
          break;
        case R_X86_64_GOTPCREL:
        case R_X86_64_GOTPCRELX:
        case R_X86_64_REX_GOTPCRELX:
          value = static_cast<int64_t>(reinterpret_cast<uint64_t>(base + got_at + static_cast<uint64_t>(got_slot[sym]) * 8)) + A - P;
          break;
        case R_X86_64_32:
        case R_X86_64_32S: value = S + A; break;
        default:
          bad("unsupported relocation type " + std::to_string(type) + " in " + o.section_name(rs.sh_info) +
              " (compile kernels with -fPIC and the default small code model)");
      }
      if (width == 8) {
        std::memcpy(where, &value, 8);
        continue;
      }
      bool fits = type == R_X86_64_32 ? (value >= 0 && value <= int64_t{UINT32_MAX})
                                      : (value >= int64_t{INT32_MIN} && value <= int64_t{INT32_MAX});
      if (!fits)
        bad("relocation type " + std::to_string(type) + " against '" + o.symbol_name(o.syms[sym]) +
            "' does not fit in 32 bits (compile kernels with -fPIC)");
      uint32_t v32 = static_cast<uint32_t>(value);
      std::memcpy(where, &v32, 4);
    }
  }

  // Exported symbols, then protections (code becomes read+exec, constants and the GOT read-only).
  for (size_t s = 1; s < n_sym; ++s) {
    const Elf64_Sym& sym = o.syms[s];
    int bind = ELF64_ST_BIND(sym.st_info);
    if ((bind == STB_GLOBAL || bind == STB_WEAK) && sym.st_shndx != SHN_UNDEF && usable[s])
      image->symbols_.emplace_back(o.symbol_name(sym), reinterpret_cast<void*>(addr[s]));
  }
  const int prot[3] = {PROT_READ | PROT_EXEC, PROT_READ, PROT_READ | PROT_WRITE};
  for (int g = kText; g <= kRodata; ++g) {
    uint64_t len = align_up(group_end[g], page) - group_begin[g];
    if (len && mprotect(base + group_begin[g], len, prot[g]) != 0)
      throw sdk::Error{KILN_STATUS_INTERNAL, std::string("mprotect of kernel code: ") + std::strerror(errno)};
  }
  return image;
}

std::unique_ptr<Image> load_image(std::string_view binary) {
  if (binary.size() >= sizeof(Elf64_Ehdr) && std::memcmp(binary.data(), ELFMAG, SELFMAG) == 0) {
    Elf64_Ehdr eh;
    std::memcpy(&eh, binary.data(), sizeof eh);
    if (eh.e_type == ET_REL) return load_object(binary);
    if (eh.e_type == ET_DYN) return load_shared(binary);
  }
  bad("the binary is neither a relocatable object nor a shared library (was it produced by this cpu backend?)");
}

}  // namespace kiln::cpu
