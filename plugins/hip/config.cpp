// plugins/hip/config.cpp - options and offline targets.
#include "config.hpp"

#include <cctype>
#include <cstdlib>
#include <sstream>

namespace kiln::hip {

namespace {
bool valid_arch(const std::string& a);
}  // namespace

HipConfig read_config(const sdk::Options& o) {
  HipConfig c;
  for (const std::string& key : o.unknown_keys({"compiler", "flags", "arch", "offline_arch"}))
    sdk::log(KILN_LOG_WARNING, "unknown option '" + key + "' (known: compiler, flags, arch, offline_arch)");
  c.compiler.compiler = o.get_string("compiler", "clang-15");
  if (c.compiler.compiler.empty()) throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT, "option 'compiler' is empty"};
  const sdk::OptionValue* flags = o.find("flags");
  if (flags && flags->kind == sdk::OptionValue::Kind::array) {
    c.compiler.flags = o.get_strings("flags", {});
  } else if (flags) {
    c.compiler.flags.clear();
    std::istringstream words(o.get_string("flags", "-O3"));
    for (std::string w; words >> w;) c.compiler.flags.push_back(w);
  }
  c.arch = o.get_string("arch", "");
  if (!c.arch.empty() && !valid_arch(c.arch))
    throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT,
                     "option 'arch': '" + c.arch + "' is not an AMDGPU arch (like gfx90a, gfx1030, gfx1100)"};
  return c;
}

namespace {

bool valid_arch(const std::string& a) {
  std::string base = base_arch(a);
  if (base.size() < 4 || base.compare(0, 3, "gfx") != 0) return false;
  for (size_t i = 3; i < base.size(); ++i)
    if (!std::isxdigit(static_cast<unsigned char>(base[i]))) return false;
  return true;
}

}  // namespace

std::vector<std::string> offline_archs() {
  const char* env = std::getenv(kOfflineArchEnv);
  std::vector<std::string> out;
  if (!env) return out;
  std::string text = env;
  for (char& ch : text)
    if (ch == ',') ch = ' ';
  std::istringstream words(text);
  for (std::string w; words >> w;) {
    if (!valid_arch(w))
      throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT, std::string(kOfflineArchEnv) + ": '" + w +
                                                         "' is not an AMDGPU arch (like gfx90a, gfx1030, gfx1100)"};
    out.push_back(w);
  }
  return out;
}

std::vector<std::string> offline_archs(const sdk::Options& o) {
  std::vector<std::string> out = o.get_strings("offline_arch", {});
  for (const std::string& a : out)
    if (!valid_arch(a))
      throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT,
                       "option 'offline_arch': '" + a + "' is not an AMDGPU arch (like gfx90a, gfx1030, gfx1100)"};
  return out;
}

std::string base_arch(const std::string& gcn_arch_name) { return gcn_arch_name.substr(0, gcn_arch_name.find(':')); }

}  // namespace kiln::hip
