// tests/hip/code_object_test.cpp - the hip plugin's ELF reader on bad input: every malformed file
// is an INVALID_ARGUMENT error, never a crash or an out-of-bounds read.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>

#include "code_object.hpp"
#include "kiln/sdk.hpp"

using namespace kiln::hip;

namespace {

std::string elf_header(uint16_t machine) {
  std::string h(64, '\0');
  std::memcpy(h.data(), "\x7f" "ELF", 4);
  h[4] = 2;  // 64-bit
  h[5] = 1;  // little-endian
  std::memcpy(h.data() + 18, &machine, 2);
  return h;
}

}  // namespace

TEST(CodeObject, RejectsWhatIsNotAnElf64File) {
  for (std::string bad : {std::string(), std::string("hello"), std::string(100, 'x'), std::string("\x7f" "ELF\x01\x01", 6) +
                                                                                           std::string(58, '\0')}) {
    try {
      parse_code_object(bad);
      FAIL() << "accepted " << bad.size() << " bytes";
    } catch (const kiln::sdk::Error& e) {
      EXPECT_EQ(e.code, KILN_STATUS_INVALID_ARGUMENT);
      EXPECT_NE(e.message.find("not a valid AMDGPU code object"), std::string::npos) << e.message;
    }
  }
}

TEST(CodeObject, ReadsTheHeaderOfAMinimalFile) {
  CodeObject co = parse_code_object(elf_header(kEmAmdgpu));
  EXPECT_EQ(co.machine, kEmAmdgpu);
  EXPECT_TRUE(co.symbols.empty());
  EXPECT_EQ(kernel_arg_counts(co, "k").buffers, -1);
}

TEST(CodeObject, SectionTablesOutsideTheFileAreErrors) {
  std::string h = elf_header(kEmAmdgpu);
  uint64_t shoff = 1 << 20;
  uint16_t entsize = 64, num = 3;
  std::memcpy(h.data() + 40, &shoff, 8);
  std::memcpy(h.data() + 58, &entsize, 2);
  std::memcpy(h.data() + 60, &num, 2);
  EXPECT_THROW(parse_code_object(h), kiln::sdk::Error);
}

// Random corruption of a well-formed header with section tables: errors or results, no crash.
TEST(CodeObject, CorruptedFilesNeverCrash) {
  std::string base = elf_header(kEmAmdgpu);
  base.resize(64 + 3 * 64, '\0');
  uint64_t shoff = 64;
  uint16_t entsize = 64, num = 3;
  std::memcpy(base.data() + 40, &shoff, 8);
  std::memcpy(base.data() + 58, &entsize, 2);
  std::memcpy(base.data() + 60, &num, 2);
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::string f = base;
    for (int k = 0; k < 6; ++k) f[rng() % f.size()] = static_cast<char>(rng());
    try {
      CodeObject co = parse_code_object(f);
      for (const ElfSymbol& s : co.symbols) co.symbol_bytes(s);
    } catch (const kiln::sdk::Error&) {
    }
  }
}
