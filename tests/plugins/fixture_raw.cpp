// tests/plugins/fixture_raw.cpp - "raw": a plugin on the bare C ABI (no SDK trampolines catching
// anything) that misbehaves as the environment variable KILN_FIXTURE_MODE says:
//   entry-segv, probe-segv, probe-abort, open-segv   crash in that call
//   probe-hang                                       never return from probe
//   probe-exit0                                      exit(0) the process from probe
//   probe-stdout                                     print to stdout from probe and device_count
//   count-throw                                      device_count throws a non-std exception
//   count-huge, count-1e9                            device_count reports 2^32-1 / 10^9 devices
//   long-strings                                     a 1 MiB version and a probe reason with
//                                                    control characters and bytes that are not UTF-8
//   fork-sensitive                                   like a GPU runtime that does not survive
//                                                    fork: probe hangs in a child forked from a
//                                                    process where a raw fixture was loaded
// Otherwise (and after the modes above that return) it is a backend with 1 device that never
// opens (device_open fails cleanly).
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "kiln/plugin.h"

namespace {

const kiln_host_api* g_host = nullptr;

bool mode(const char* m) {
  const char* v = std::getenv("KILN_FIXTURE_MODE");
  return v && std::strcmp(v, m) == 0;
}

void crash() { std::raise(SIGSEGV); }

// fork-sensitive: the first probe in a process records its pid in the environment; a process
// that inherited another pid there is a fork of a process that had the fixture loaded.
void fork_sensitive() {
  const char* loaded = std::getenv("KILN_FIXTURE_RAW_LOADED_IN");
  std::string self = std::to_string(getpid());
  if (loaded && self != loaded)
    for (;;) pause();
  setenv("KILN_FIXTURE_RAW_LOADED_IN", self.c_str(), 1);
}

kiln_error* probe(int32_t* out_score, kiln_sink* out_reason) {
  if (mode("fork-sensitive")) fork_sensitive();
  if (mode("probe-segv")) crash();
  if (mode("probe-abort")) std::abort();
  if (mode("probe-exit0")) std::exit(0);
  if (mode("probe-hang"))
    for (;;) pause();
  if (mode("probe-stdout")) std::printf("raw plugin chatter on stdout\n");
  std::string reason = "raw fixture";
  if (mode("long-strings")) reason = "line one\nline two\x1b[31m red \xff\xfe tab\there";
  out_reason->append(out_reason->ctx, reason.data(), reason.size());
  *out_score = 1;
  return nullptr;
}

kiln_error* count(uint32_t* out) {
  if (mode("count-throw")) throw 42;
  if (mode("probe-stdout")) std::printf("{\"not\": \"kiln's json\"}\n");
  *out = mode("count-huge") ? 0xFFFFFFFFu : mode("count-1e9") ? 1000000000u : 1u;
  return nullptr;
}

kiln_error* open_device(uint32_t, kiln_device**, const kiln_device_api**) {
  if (mode("open-segv")) crash();
  const char msg[] = "the raw fixture has no real devices";
  return g_host->error_new(KILN_STATUS_UNAVAILABLE, msg, sizeof msg - 1);
}

std::string g_version = "1.0.0";

kiln_plugin_api g_table = {sizeof(kiln_plugin_api), KILN_ABI_MAJOR, KILN_ABI_MINOR, FIXTURE_RAW_NAME, "1.0.0", probe,
                           nullptr, count, open_device, nullptr, nullptr};

}  // namespace

extern "C" KILN_EXPORT kiln_status kiln_plugin_entry(kiln_entry_args* args) {
  if (mode("entry-segv")) crash();
  g_host = args->host;
  if (mode("long-strings")) {
    g_version.assign(1 << 20, '7');
    g_table.version = g_version.c_str();
  }
  args->plugin = &g_table;
  return KILN_STATUS_OK;
}
