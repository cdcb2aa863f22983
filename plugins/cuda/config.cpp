// plugins/cuda/config.cpp - options and offline targets.
#include "config.hpp"

#include <cstdlib>
#include <sstream>

#include "ptx.hpp"

namespace kiln::cuda {

namespace {

std::string not_an_arch(const std::string& where, const std::string& a) {
  return where + ": '" + a + "' is not a CUDA arch (like sm_80, sm_90)";
}

}  // namespace

CudaConfig read_config(const sdk::Options& o) {
  CudaConfig c;
  for (const std::string& key : o.unknown_keys({"compiler", "nvrtc", "clang", "flags", "arch", "offline_arch"}))
    sdk::log(KILN_LOG_WARNING, "unknown option '" + key + "' (known: compiler, nvrtc, clang, flags, arch, offline_arch)");
  c.compiler.kind = o.get_string("compiler", "auto");
  if (c.compiler.kind != "auto" && c.compiler.kind != "nvrtc" && c.compiler.kind != "clang")
    throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT,
                     "option 'compiler': '" + c.compiler.kind + "' is not a CUDA compiler (auto, nvrtc or clang)"};
  c.compiler.nvrtc = o.get_string("nvrtc", "");
  c.compiler.clang = o.get_string("clang", "clang-15");
  if (c.compiler.clang.empty()) throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT, "option 'clang' is empty"};
  const sdk::OptionValue* flags = o.find("flags");
  if (flags && flags->kind == sdk::OptionValue::Kind::array) {
    c.compiler.flags = o.get_strings("flags", {});
  } else if (flags) {
    std::istringstream words(o.get_string("flags", ""));
    for (std::string w; words >> w;) c.compiler.flags.push_back(w);
  }
  c.arch = o.get_string("arch", "");
  if (!c.arch.empty() && !sm_number(c.arch)) throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT, not_an_arch("option 'arch'", c.arch)};
  return c;
}

std::vector<std::string> offline_archs() {
  const char* env = std::getenv(kOfflineArchEnv);
  std::vector<std::string> out;
  if (!env) return out;
  std::string text = env;
  for (char& ch : text)
    if (ch == ',') ch = ' ';
  std::istringstream words(text);
  for (std::string w; words >> w;) {
    if (!sm_number(w)) throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT, not_an_arch(kOfflineArchEnv, w)};
    out.push_back(w);
  }
  return out;
}

std::vector<std::string> offline_archs(const sdk::Options& o) {
  std::vector<std::string> out = o.get_strings("offline_arch", {});
  for (const std::string& a : out)
    if (!sm_number(a)) throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT, not_an_arch("option 'offline_arch'", a)};
  return out;
}

}  // namespace kiln::cuda
