// plugins/hip/code_object.cpp - a bounds-checked ELF64 reader for AMDGPU code objects.
#include "code_object.hpp"

#include <cstring>

#include "kiln/sdk.hpp"

namespace kiln::hip {

namespace {

[[noreturn]] void bad(const std::string& why) {
  throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT, "not a valid AMDGPU code object: " + why};
}

template <typename T>
T read(std::string_view b, uint64_t offset) {
  if (offset > b.size() || sizeof(T) > b.size() - offset) bad("truncated at byte " + std::to_string(offset));
  T v;
  std::memcpy(&v, b.data() + offset, sizeof v);
  return v;
}

constexpr uint32_t kSymtab = 2, kDynsym = 11, kNobits = 8;

}  // namespace

CodeObject parse_code_object(std::string_view b) {
  if (b.size() < 64 || std::memcmp(b.data(), "\x7f" "ELF", 4) != 0) bad("no ELF header");
  if (b[4] != 2 || b[5] != 1) bad("not a 64-bit little-endian ELF file");
  CodeObject co;
  co.image = b;
  co.type = read<uint16_t>(b, 16);
  co.machine = read<uint16_t>(b, 18);
  co.flags = read<uint32_t>(b, 48);
  uint64_t shoff = read<uint64_t>(b, 40);
  uint16_t shentsize = read<uint16_t>(b, 58), shnum = read<uint16_t>(b, 60);
  if (shnum && shentsize < 64) bad("section header entries of " + std::to_string(shentsize) + " bytes");
  for (uint16_t i = 0; i < shnum; ++i) {
    uint64_t h = shoff + uint64_t{i} * shentsize;
    CodeObject::Section s;
    s.type = read<uint32_t>(b, h + 4);
    s.addr = read<uint64_t>(b, h + 16);
    s.offset = read<uint64_t>(b, h + 24);
    s.size = read<uint64_t>(b, h + 32);
    if (s.type != kNobits && (s.offset > b.size() || s.size > b.size() - s.offset))
      bad("section " + std::to_string(i) + " lies outside the file");
    co.sections.push_back(s);
  }
  for (uint16_t i = 0; i < shnum; ++i) {
    const CodeObject::Section& s = co.sections[i];
    if (s.type != kSymtab && s.type != kDynsym) continue;
    uint64_t h = shoff + uint64_t{i} * shentsize;
    uint32_t link = read<uint32_t>(b, h + 40);
    uint64_t entsize = read<uint64_t>(b, h + 56);
    if (link >= co.sections.size() || entsize < 24) bad("symbol table " + std::to_string(i) + " is malformed");
    const CodeObject::Section& strtab = co.sections[link];
    for (uint64_t e = entsize; e + 24 <= s.size; e += entsize) {  // entry 0 is the null symbol
      uint64_t p = s.offset + e;
      ElfSymbol sym;
      uint32_t name = read<uint32_t>(b, p);
      sym.type = read<uint8_t>(b, p + 4) & 0xf;
      sym.section = read<uint16_t>(b, p + 6);
      sym.value = read<uint64_t>(b, p + 8);
      sym.size = read<uint64_t>(b, p + 16);
      if (name >= strtab.size) bad("a symbol name lies outside its string table");
      const char* start = b.data() + strtab.offset + name;
      sym.name.assign(start, strnlen(start, strtab.size - name));
      co.symbols.push_back(std::move(sym));
    }
  }
  return co;
}

const ElfSymbol* CodeObject::symbol(std::string_view name) const {
  for (const ElfSymbol& s : symbols)
    if (s.name == name) return &s;
  return nullptr;
}

std::string_view CodeObject::symbol_bytes(const ElfSymbol& s) const {
  if (s.section == 0 || s.section >= sections.size()) return {};
  const Section& sec = sections[s.section];
  if (sec.type == kNobits || s.value < sec.addr || s.value - sec.addr > sec.size || s.size > sec.size - (s.value - sec.addr))
    return {};
  return image.substr(sec.offset + (s.value - sec.addr), s.size);
}

ArgCounts kernel_arg_counts(const CodeObject& co, std::string_view entry) {
  ArgCounts c;
  const ElfSymbol* s = co.symbol("kiln_nargs_" + std::string(entry));
  if (!s) return c;
  std::string_view bytes = co.symbol_bytes(*s);
  if (bytes.size() != 8) bad("kiln_nargs_" + std::string(entry) + " is not two 32-bit counts");
  uint32_t v[2];
  std::memcpy(v, bytes.data(), 8);
  c.buffers = v[0];
  c.values = v[1];
  return c;
}

}  // namespace kiln::hip
