// kiln/sdk/elf64.hpp - a small, bounds-checked ELF64 (little-endian) reader, header-only.
//
// For plugins that check the binaries their compiler produced (the hip plugin reads AMDGPU code
// objects: kernel symbols, descriptors, argument counts), and for the conformance kit (which
// symbols a plugin library exports). It lives in the SDK because both may use the SDK and
// neither may use the other's private code. Every read is checked against
// the file; malformed input throws sdk::Error{INVALID_ARGUMENT} "not a valid <what>: <why>".
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/sdk/error.hpp"

namespace kiln::sdk {

struct ElfSymbol {
  std::string name;
  uint64_t value = 0, size = 0;
  uint16_t section = 0;    // 0 = undefined (imported)
  uint8_t type = 0;        // STT_OBJECT 1, STT_FUNC 2
  uint8_t binding = 0;     // STB_LOCAL 0, STB_GLOBAL 1, STB_WEAK 2, STB_GNU_UNIQUE 10
  uint8_t visibility = 0;  // STV_DEFAULT 0, STV_HIDDEN 2, STV_PROTECTED 3
  bool dynamic = false;    // from .dynsym (else .symtab)
};

struct Elf64 {
  uint16_t type = 0;     // ET_DYN 3
  uint16_t machine = 0;  // EM_X86_64 62, EM_AMDGPU 224
  uint32_t flags = 0;
  std::vector<ElfSymbol> symbols;  // .dynsym and .symtab entries (not the null symbol)
  struct Section {
    uint32_t type = 0;
    uint64_t addr = 0, offset = 0, size = 0;
  };
  std::vector<Section> sections;
  std::string_view image;  // the parsed bytes (borrowed)

  const ElfSymbol* symbol(std::string_view name) const {
    for (const ElfSymbol& s : symbols)
      if (s.name == name) return &s;
    return nullptr;
  }
  // The initial bytes of a data symbol (its section's contents); empty when it has none.
  std::string_view symbol_bytes(const ElfSymbol& s) const {
    if (s.section == 0 || s.section >= sections.size()) return {};
    const Section& sec = sections[s.section];
    if (sec.type == kNobits || s.value < sec.addr || s.value - sec.addr > sec.size || s.size > sec.size - (s.value - sec.addr))
      return {};
    return image.substr(sec.offset + (s.value - sec.addr), s.size);
  }

  static constexpr uint32_t kSymtab = 2, kDynsym = 11, kNobits = 8;

  // Parses `bytes` (which must outlive the result); `what` names the file kind in errors.
  static Elf64 parse(std::string_view b, const std::string& what) {
    auto bad = [&](const std::string& why) -> void {
      throw Error{KILN_STATUS_INVALID_ARGUMENT, "not a valid " + what + ": " + why};
    };
    auto need = [&](uint64_t offset, uint64_t n) {
      if (offset > b.size() || n > b.size() - offset) bad("truncated at byte " + std::to_string(offset));
    };
    auto u8 = [&](uint64_t o) { need(o, 1); return static_cast<uint8_t>(b[o]); };
    auto u16 = [&](uint64_t o) { need(o, 2); uint16_t v; std::memcpy(&v, b.data() + o, 2); return v; };
    auto u32 = [&](uint64_t o) { need(o, 4); uint32_t v; std::memcpy(&v, b.data() + o, 4); return v; };
    auto u64 = [&](uint64_t o) { need(o, 8); uint64_t v; std::memcpy(&v, b.data() + o, 8); return v; };
    if (b.size() < 64 || std::memcmp(b.data(), "\x7f" "ELF", 4) != 0) bad("no ELF header");
    if (b[4] != 2 || b[5] != 1) bad("not a 64-bit little-endian ELF file");
    Elf64 e;
    e.image = b;
    e.type = u16(16);
    e.machine = u16(18);
    e.flags = u32(48);
    uint64_t shoff = u64(40);
    uint16_t shentsize = u16(58), shnum = u16(60);
    if (shnum && shentsize < 64) bad("section header entries of " + std::to_string(shentsize) + " bytes");
    for (uint16_t i = 0; i < shnum; ++i) {
      uint64_t h = shoff + uint64_t{i} * shentsize;
      Section s;
      s.type = u32(h + 4);
      s.addr = u64(h + 16);
      s.offset = u64(h + 24);
      s.size = u64(h + 32);
      if (s.type != kNobits && (s.offset > b.size() || s.size > b.size() - s.offset))
        bad("section " + std::to_string(i) + " lies outside the file");
      e.sections.push_back(s);
    }
    for (uint16_t i = 0; i < shnum; ++i) {
      const Section& s = e.sections[i];
      if (s.type != kSymtab && s.type != kDynsym) continue;
      uint64_t h = shoff + uint64_t{i} * shentsize;
      uint32_t link = u32(h + 40);
      uint64_t entsize = u64(h + 56);
      if (link >= e.sections.size() || entsize < 24) bad("symbol table " + std::to_string(i) + " is malformed");
      const Section& strtab = e.sections[link];
      for (uint64_t off = entsize; off + 24 <= s.size; off += entsize) {  // entry 0 is the null symbol
        uint64_t p = s.offset + off;
        ElfSymbol sym;
        uint32_t name = u32(p);
        uint8_t info = u8(p + 4);
        sym.type = info & 0xf;
        sym.binding = info >> 4;
        sym.visibility = u8(p + 5) & 0x3;
        sym.section = u16(p + 6);
        sym.value = u64(p + 8);
        sym.size = u64(p + 16);
        sym.dynamic = s.type == kDynsym;
        if (name >= strtab.size) bad("a symbol name lies outside its string table");
        const char* start = b.data() + strtab.offset + name;
        sym.name.assign(start, strnlen(start, strtab.size - name));
        e.symbols.push_back(std::move(sym));
      }
    }
    return e;
  }
};

}  // namespace kiln::sdk
