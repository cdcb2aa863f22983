// tests/abi/abi_lock_test.cpp - the plugin ABI may change only together with abi_lock.inc.
#include <gtest/gtest.h>

#include <cstddef>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "kiln/plugin.h"

namespace {

struct StructRow {
  const char* type;
  size_t size, align, actual_size, actual_align;
};
struct FieldRow {
  const char* type;
  const char* field;
  size_t offset, size, actual_offset, actual_size, actual_align;
};
struct ConstRow {
  const char* name;
  long long value, actual;
};

#define KILN_ABI_STRUCT(T, size, align) {#T, size, align, sizeof(T), alignof(T)},
#define KILN_ABI_FIELD(T, f, offset, size)
#define KILN_ABI_CONST(name, value)
const StructRow kStructs[] = {
#include "abi_lock.inc"
};
#undef KILN_ABI_STRUCT
#undef KILN_ABI_FIELD
#define KILN_ABI_STRUCT(T, size, align)
#define KILN_ABI_FIELD(T, f, offset, size)                                                         \
  {#T, #f, offset, size, offsetof(T, f), sizeof(std::declval<T&>().f), alignof(decltype(std::declval<T&>().f))},
const FieldRow kFields[] = {
#include "abi_lock.inc"
};
#undef KILN_ABI_FIELD
#undef KILN_ABI_CONST
#define KILN_ABI_FIELD(T, f, offset, size)
#define KILN_ABI_CONST(name, value) {#name, value, static_cast<long long>(name)},
const ConstRow kConsts[] = {
#include "abi_lock.inc"
};

size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

std::string read_header(const char* name) {
  std::ifstream in(std::string(KILN_SDK_HEADER_DIR) + "/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string strip_comments(std::string s) {
  s = std::regex_replace(s, std::regex(R"(/\*[\s\S]*?\*/)"), " ");
  return std::regex_replace(s, std::regex(R"(//[^\n]*)"), " ");
}

// (struct, its field names in order) for every `typedef struct X { ... } X;` in the headers.
std::vector<std::pair<std::string, std::vector<std::string>>> declared_structs() {
  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  for (const char* header : {"plugin.h", "lir.h"}) {
    std::string text = read_header(header);
    EXPECT_FALSE(text.empty()) << "cannot read " << header;
    std::regex def(R"(typedef struct (\w+) \{([\s\S]*?)\} \1;)");
    for (std::sregex_iterator it(text.begin(), text.end(), def), end; it != end; ++it) {
      std::vector<std::string> fields;
      std::string body = strip_comments((*it)[2].str());
      std::stringstream decls(body);
      for (std::string decl; std::getline(decls, decl, ';');) {
        std::smatch m;
        if (std::regex_search(decl, m, std::regex(R"(\(\*\s*(\w+)\s*\))"))) {  // function pointer
          fields.push_back(m[1]);
          continue;
        }
        std::stringstream parts(std::regex_replace(decl, std::regex(R"(\[[^\]]*\])"), ""));
        for (std::string part; std::getline(parts, part, ',');) {
          static const std::regex word(R"(\w+)");
          std::vector<std::string> words;
          for (std::sregex_iterator w(part.begin(), part.end(), word), e; w != e; ++w) words.push_back(w->str());
          if (!words.empty()) fields.push_back(words.back());
        }
      }
      out.emplace_back((*it)[1], fields);
    }
  }
  return out;
}

std::vector<std::string> declared_constants() {
  std::vector<std::string> out;
  for (const char* header : {"plugin.h", "lir.h"}) {
    std::string text = read_header(header);
    std::regex def(R"(#define (KILN_\w+) +\(?\d)");
    for (std::sregex_iterator it(text.begin(), text.end(), def), end; it != end; ++it) out.push_back((*it)[1]);
  }
  return out;
}

TEST(AbiLock, StructSizesAndAlignment) {
  for (const StructRow& s : kStructs) {
    EXPECT_EQ(s.actual_size, s.size) << "sizeof(" << s.type << ") changed: update abi_lock.inc";
    EXPECT_EQ(s.actual_align, s.align) << "alignof(" << s.type << ") changed";
  }
}

TEST(AbiLock, FieldOffsetsAndSizes) {
  for (const FieldRow& f : kFields) {
    EXPECT_EQ(f.actual_offset, f.offset) << f.type << "." << f.field << " moved: KILN_ABI_FIELD(" << f.type << ", "
                                         << f.field << ", " << f.actual_offset << ", " << f.actual_size << ")";
    EXPECT_EQ(f.actual_size, f.size) << f.type << "." << f.field << " changed size";
  }
}

// Listed fields tile each struct exactly (up to alignment padding), so no field can hide between them.
TEST(AbiLock, FieldsCoverEachStruct) {
  for (const StructRow& s : kStructs) {
    size_t end = 0;
    int n = 0;
    for (const FieldRow& f : kFields) {
      if (std::string(f.type) != s.type) continue;
      EXPECT_EQ(f.actual_offset, align_up(end, f.actual_align))
          << s.type << ": something is declared between the field before " << f.field << " and " << f.field;
      end = f.actual_offset + f.actual_size;
      ++n;
    }
    EXPECT_GT(n, 0) << s.type << " has no fields in abi_lock.inc";
    EXPECT_EQ(s.actual_size, align_up(end, s.actual_align)) << s.type << ": a field after the last listed one";
  }
}

// Every struct and field the headers declare is in the table, in declaration order.
TEST(AbiLock, TableListsEveryDeclaredStructAndField) {
  auto declared = declared_structs();
  ASSERT_EQ(declared.size(), std::size(kStructs)) << "a struct was added to or removed from the headers";
  for (size_t i = 0; i < declared.size(); ++i) {
    EXPECT_EQ(declared[i].first, kStructs[i].type);
    std::vector<std::string> listed;
    for (const FieldRow& f : kFields)
      if (declared[i].first == f.type) listed.push_back(f.field);
    EXPECT_EQ(declared[i].second, listed) << "fields of " << declared[i].first << " differ from abi_lock.inc";
  }
}

TEST(AbiLock, ConstantsAreLocked) {
  for (const ConstRow& c : kConsts) EXPECT_EQ(c.actual, c.value) << c.name << " changed value";
  std::vector<std::string> declared = declared_constants();
  std::vector<std::string> listed;
  for (const ConstRow& c : kConsts) listed.push_back(c.name);
  EXPECT_EQ(declared, listed) << "a constant was added, removed or reordered: update abi_lock.inc";
  EXPECT_STREQ(KILN_ENTRY_SYMBOL, "kiln_plugin_entry");
}

// The entry arguments must never change: hosts and plugins of every ABI version read them.
TEST(AbiLock, EntryArgsAreFrozen) {
  EXPECT_EQ(sizeof(kiln_entry_args), 32u);
  EXPECT_EQ(offsetof(kiln_entry_args, plugin), 24u);
  EXPECT_EQ(KILN_SIZE_UPTO(kiln_plugin_api, abi_minor), 16u);
}

}  // namespace
