// plugins/cuda/ptx.cpp - reading PTX headers and entries.
#include "ptx.hpp"

#include <cctype>
#include <cstdio>

#include "kiln/sdk.hpp"

namespace kiln::cuda {

namespace {

// The word after `directive` at the start of a line (".target sm_90, debug" -> "sm_90"), or "".
std::string directive_word(std::string_view text, std::string_view directive, size_t* where = nullptr) {
  size_t pos = 0;
  while ((pos = text.find(directive, pos)) != std::string_view::npos) {
    bool line_start = pos == 0 || text[pos - 1] == '\n';
    size_t after = pos + directive.size();
    if (line_start && after < text.size() && (text[after] == ' ' || text[after] == '\t')) {
      size_t b = text.find_first_not_of(" \t", after);
      size_t e = b == std::string_view::npos ? b : text.find_first_of(" \t,\r\n", b);
      if (where) *where = pos;
      return std::string(text.substr(b, e == std::string_view::npos ? std::string_view::npos : e - b));
    }
    pos = after;
  }
  return "";
}

}  // namespace

std::optional<int> sm_number(std::string_view arch) {
  if (arch.size() < 5 || arch.substr(0, 3) != "sm_") return std::nullopt;
  std::string_view digits = arch.substr(3);
  if (digits.back() == 'a' || digits.back() == 'f') digits.remove_suffix(1);
  if (digits.empty() || digits.size() > 3) return std::nullopt;
  int n = 0;
  for (char c : digits) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    n = n * 10 + (c - '0');
  }
  return n >= 20 ? std::optional<int>(n) : std::nullopt;
}

PtxInfo parse_ptx(std::string_view ptx) {
  PtxInfo info;
  std::string version = directive_word(ptx, ".version");
  info.target = directive_word(ptx, ".target");
  if (version.empty() || info.target.empty())
    throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT, "not PTX: no .version and .target directives (the cuda backend "
                                                   "loads PTX text, as its compiler writes it)"};
  if (std::sscanf(version.c_str(), "%d.%d", &info.version_major, &info.version_minor) != 2)
    throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT, "not PTX: '.version " + version + "' is not major.minor"};
  return info;
}

std::optional<int> ptx_entry_params(std::string_view ptx, std::string_view entry) {
  std::string key = ".entry " + std::string(entry);
  size_t pos = 0;
  while ((pos = ptx.find(key, pos)) != std::string_view::npos) {
    size_t after = pos + key.size();
    size_t open = ptx.find_first_not_of(" \t\r\n", after);
    pos = after;
    if (open == std::string_view::npos) return std::nullopt;
    if (ptx[open] != '(') {
      if (ptx[open] == '{' || ptx[open] == '.') return 0;  // no parameter list
      continue;                                            // a longer name with this prefix
    }
    size_t close = ptx.find(')', open);
    if (close == std::string_view::npos) return std::nullopt;
    int n = 0;
    for (size_t p = ptx.find(".param", open); p < close; p = ptx.find(".param", p + 1)) ++n;
    return n;
  }
  return std::nullopt;
}

int min_ptx_version(int sm) {
  struct Row {
    int sm, ptx;
  };
  // PTX ISA versions that introduced each target (the PTX ISA manual's "target directive" table)
  static const Row rows[] = {{20, 10}, {30, 31}, {35, 31}, {37, 41}, {50, 40}, {52, 41}, {53, 42}, {60, 50},
                             {61, 50}, {62, 50}, {70, 60}, {72, 61}, {75, 63}, {80, 70}, {86, 71}, {87, 74},
                             {89, 78}, {90, 78}, {100, 86}, {101, 86}, {103, 88}, {110, 90}, {120, 87}, {121, 88}};
  for (const Row& r : rows)
    if (r.sm == sm) return r.ptx;
  return 0;
}

int max_ptx_version_of_driver(int driver) {
  int major = driver / 1000, minor = driver % 1000 / 10;
  if (major == 11) return 70 + minor;                                      // 11.0: 7.0 .. 11.8: 7.8
  if (major == 12) return minor <= 7 ? 80 + minor : minor == 8 ? 87 : 88;  // 12.0: 8.0 .. 12.8: 8.7, 12.9: 8.8
  if (major >= 13) return 90 + minor;                                      // 13.0: 9.0 (newer: assumed to go on)
  return 0;
}

std::string with_ptx_version(std::string ptx, int version) {
  size_t v = 0;
  std::string old_version = directive_word(ptx, ".version", &v);
  if (old_version.empty()) throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT, "not PTX: no .version directive"};
  ptx.replace(ptx.find(old_version, v), old_version.size(), std::to_string(version / 10) + "." + std::to_string(version % 10));
  return ptx;
}

std::string retarget_ptx(std::string ptx, const std::string& arch) {
  size_t where = 0;
  std::string old_target = directive_word(ptx, ".target", &where);
  if (old_target.empty()) throw sdk::Error{KILN_STATUS_INTERNAL, "retarget_ptx: no .target directive"};
  ptx.replace(ptx.find(old_target, where), old_target.size(), arch);
  PtxInfo info = parse_ptx(ptx);
  int need = min_ptx_version(sm_number(arch).value_or(0));
  return need > info.version_major * 10 + info.version_minor ? with_ptx_version(std::move(ptx), need) : ptx;
}

}  // namespace kiln::cuda
