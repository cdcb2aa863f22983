// tests/conformance/backend_api_test.cpp - kiln/backend.hpp, the public host interface the
// conformance kit is built on, checked on the cpu backend with public headers only (ctest points
// KILN_BACKENDS at the build tree's cpu manifest). The kit's own runs (test_conformance,
// conformance_*) exercise every call on real plugins; this pins the contracts the header states.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "kiln/backend.hpp"
#include "kiln/kiln.hpp"
#include "kiln/plugin.h"

namespace kb = kiln::backend;

TEST(BackendApi, ReadsAndValidatesManifests) {
  kb::ManifestInfo cpu = kb::read_manifest(KILN_CPU_MANIFEST);
  EXPECT_TRUE(cpu.ok()) << cpu.error;
  EXPECT_EQ(cpu.name, "cpu");
  EXPECT_FALSE(cpu.library.empty());
  kb::ManifestInfo broken = kb::read_manifest(KILN_BROKEN_MANIFEST);  // an unterminated string
  EXPECT_FALSE(broken.ok());
  EXPECT_NE(broken.error.find("broken.toml:"), std::string::npos) << broken.error;
  EXPECT_NE(broken.error.find("error"), std::string::npos) << broken.error;
  kb::ManifestInfo missing = kb::read_manifest("/nonexistent/none.toml");
  EXPECT_FALSE(missing.ok());
}

TEST(BackendApi, TheRegistrysViewOfABackend) {
  ASSERT_EQ(kb::registry_backends().value_or(""), KILN_CPU_MANIFEST);
  std::optional<kb::BackendState> cpu = kb::backend_state("cpu");
  ASSERT_TRUE(cpu.has_value());
  EXPECT_TRUE(cpu->ok()) << cpu->status << ": " << cpu->reason;
  EXPECT_EQ(cpu->status, "ok");
  EXPECT_GE(cpu->device_count, 1u);
  ASSERT_NE(cpu->api, nullptr);
  EXPECT_STREQ(cpu->api->name, "cpu");
  EXPECT_FALSE(kb::backend_state("no_such_backend").has_value());
}

TEST(BackendApi, DevicesAreTheRegistrysDevices) {
  kb::Device a = kb::Device::open("cpu");
  kb::Device b = kb::Device::open("cpu:0");
  EXPECT_EQ(a.name(), "cpu:0");
  EXPECT_EQ(a.backend(), "cpu");
  EXPECT_EQ(&a.props(), &b.props());  // one device per name, its records handed out as they are
  EXPECT_EQ(a.props().kind, KILN_DEVICE_KIND_CPU);
  EXPECT_FALSE(a.props().name.empty());
  EXPECT_TRUE(a.target().supports_dtype(KILN_LIR_DTYPE_FLOAT32));
  EXPECT_TRUE(a.target().has(KILN_TARGET_HAS_THREADS));
  EXPECT_TRUE(a.has_renderer());
  try {
    kb::Device::open("no_such_backend:0");
    FAIL() << "opened a device of a backend that does not exist";
  } catch (const kiln::Error& e) {
    EXPECT_EQ(e.code(), kiln::ErrorCode::not_found);
    EXPECT_NE(std::string(e.what()).find("cpu:0"), std::string::npos) << "the message lists the devices: " << e.what();
  }
}

TEST(BackendApi, MemoryAndPluginErrors) {
  kb::Device d = kb::Device::open("cpu");
  std::vector<unsigned char> in{1, 2, 3, 4, 5}, out(5);
  kiln_buffer* buf = d.alloc(5);
  d.copy_in(buf, 0, in.data(), 5);
  d.copy_out(out.data(), buf, 0, 5);
  EXPECT_EQ(out, in);
  try {
    d.copy_out(out.data(), buf, 4, 5);
    FAIL() << "a copy past the end of a buffer was accepted";
  } catch (const kiln::Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("cpu:0: ", 0), 0u) << "prefixed by the device: " << e.what();
  }
  d.free(buf);
  EXPECT_EQ(kb::take_error_message(nullptr), "");
  kb::throw_if_error(nullptr, "nothing failed");
  const kiln_host_api* host = kb::host_api();
  ASSERT_NE(host, nullptr);
  kiln_error* e = host->error_new(KILN_STATUS_INVALID_ARGUMENT, "bad thing", 9);
  try {
    kb::throw_if_error(e, "the call");
    FAIL() << "throw_if_error did not throw for an error";
  } catch (const kiln::Error& err) {
    EXPECT_EQ(err.code(), kiln::ErrorCode::invalid_argument);
    EXPECT_NE(std::string(err.what()).find("the call: bad thing"), std::string::npos) << err.what();
  }
}

// The code generator's kernel for a scheduled AST: rendered only, or built and run.
TEST(BackendApi, GeneratesBuildsAndLaunchesAKernel) {
  kb::Device d = kb::Device::open("cpu");
  kiln::Tensor x = kiln::Tensor::empty({64}, kiln::dtypes::float32, "cpu");
  std::vector<kiln::ExecItem> items = (x + 1.0).schedule();
  auto item = std::find_if(items.begin(), items.end(), [](const kiln::ExecItem& e) { return !e.is_copy; });
  ASSERT_NE(item, items.end());
  kb::KernelSource source = d.generate(item->ast);
  kb::Kernel kernel = d.kernel(item->ast);
  EXPECT_EQ(source.name, kernel.name);
  EXPECT_EQ(source.source, kernel.source);  // the same lowering and renderer
  EXPECT_EQ(kernel.n_buffers, 2u);
  EXPECT_EQ(kernel.program.entry(), kernel.name);
  std::vector<int64_t> values;
  for (const std::string& name : kernel.var_names)
    for (const auto& [var, value] : item->var_vals)
      if (var == name) values.push_back(value);
  ASSERT_EQ(values.size(), kernel.var_names.size());
  std::vector<float> in(64), out(64);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i) * 0.5f;
  kiln_buffer* src = d.alloc(64 * 4);
  kiln_buffer* dst = d.alloc(64 * 4);
  d.copy_in(src, 0, in.data(), 64 * 4);
  std::vector<kiln_buffer*> buffers{dst, src};
  d.launch(kernel.program, buffers, {}, values, kernel.global, kernel.local, true);
  d.copy_out(out.data(), dst, 0, 64 * 4);
  d.free(src);
  d.free(dst);
  for (size_t i = 0; i < in.size(); ++i) EXPECT_EQ(out[i], in[i] + 1.0f) << i;
}

TEST(BackendApi, AnEmptyProgramIsAnError) {
  kb::Program p;
  try {
    (void)p.entry();
    FAIL() << "an empty Program gave an entry";
  } catch (const kiln::Error& e) {
    EXPECT_EQ(e.code(), kiln::ErrorCode::failed_precondition);
  }
}

TEST(BackendApi, StringSinkCollectsWhatAPluginWrites) {
  kb::StringSink s;
  kiln_sink* sink = s.sink();
  EXPECT_EQ(sink->append(sink->ctx, "no devices ", 11), KILN_STATUS_OK);
  EXPECT_EQ(sink->append(sink->ctx, "here", 4), KILN_STATUS_OK);
  EXPECT_EQ(s.str(), "no devices here");
}

TEST(BackendApi, TomlQuoteLeavesNoLineBreakOrTab) {
  std::string q = kb::toml_quote("a\tb\n\"c\"\\");
  EXPECT_EQ(q.front(), '"');
  EXPECT_EQ(q.back(), '"');
  EXPECT_EQ(q.find('\t'), std::string::npos);
  EXPECT_EQ(q.find('\n'), std::string::npos);
  EXPECT_EQ(kb::signal_name(11), "SIGSEGV");
}
