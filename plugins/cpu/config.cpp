// plugins/cpu/config.cpp - validating the cpu backend's options.
#include "config.hpp"

#include <algorithm>
#include <sstream>

namespace kiln::cpu {

IsaChoice parse_isa(const std::string& text, const std::string& where) {
  const size_t plus = text.find('+');
  IsaChoice c{text.substr(0, plus), false};
  const std::string extensions = plus == std::string::npos ? "" : text.substr(plus);
  if (isa_rank(c.level) < 2)
    throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT, where + " names '" + text + "'; the cpu backend compiles for " + kIsaLevels[0] +
                                                       ", " + kIsaLevels[1] + " and " + kIsaLevels[2] + " (or \"native\")"};
  if (!extensions.empty() && (extensions != "+avx512bf16" || c.level != kIsaLevels[2]))
    throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT, where + " names '" + text + "'; the one extension known is " + kIsaLevels[2] +
                                                       "+avx512bf16 (AVX512-BF16's vdpbf16ps)"};
  c.avx512bf16 = !extensions.empty();
  return c;
}

CpuConfig read_config(const sdk::Options& o, const CpuInfo& cpu) {
  CpuConfig c;
  for (const std::string& key : o.unknown_keys({"devices", "threads", "compiler", "flags", "binary", "isa", "offline_arch"}))
    sdk::log(KILN_LOG_WARNING,
             "unknown option '" + key + "' (known: devices, threads, compiler, flags, binary, isa, offline_arch)");
  int64_t devices = o.get_int("devices", 1);
  if (devices < 1 || devices > 64)
    throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT, "option 'devices' must be between 1 and 64, got " + std::to_string(devices)};
  c.devices = static_cast<unsigned>(devices);
  int64_t threads = o.get_int("threads", 0);
  if (threads < 0 || threads > 4096)
    throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT,
                     "option 'threads' must be between 0 (the cores, split between the devices) and 4096, got " +
                         std::to_string(threads)};
  c.threads = threads == 0 ? std::max(1u, cpu.cores / c.devices) : static_cast<unsigned>(threads);
  c.compiler.compiler = o.get_string("compiler", kInProcessLlvm);
  if (c.compiler.compiler.empty()) throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT, "option 'compiler' is empty"};
  const sdk::OptionValue* flags = o.find("flags");
  if (flags && flags->kind == sdk::OptionValue::Kind::array) {
    c.compiler.flags = o.get_strings("flags", {});
  } else {
    std::istringstream words(o.get_string("flags", kDefaultFlags));
    for (std::string w; words >> w;) c.compiler.flags.push_back(w);
  }
  c.compiler.format = static_cast<BinaryFormat>(o.get_choice("binary", "object", {"object", "shared"}));
  if (c.compiler.in_process() && c.compiler.format == BinaryFormat::shared)
    throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT,
                     "option 'binary' = \"shared\" needs a C compiler: also set compiler = \"clang-15\" (the in-process "
                     "LLVM compiler makes objects)"};
  if (const std::string isa = o.get_string("isa", "native"); isa != "native") {
    const IsaChoice choice = parse_isa(isa, "option 'isa'");
    c.isa = choice.level, c.avx512bf16 = choice.avx512bf16;
  }
  return c;
}

}  // namespace kiln::cpu
