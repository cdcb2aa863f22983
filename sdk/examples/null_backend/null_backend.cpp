// null_backend.cpp - the smallest useful kiln backend: host memory, a "compiler" for a one-line
// kernel language, and a runtime that interprets it. A template for new backends.
//
// Kernel language: "add <int>". Compiling checks the syntax and returns the text as the binary.
// A launch over global[0] work items adds <int> to the int32 element i of buffer 0 for every i.
#include <charconv>
#include <cstring>
#include <string>
#include <vector>

#include <kiln/sdk.hpp>

namespace {

using namespace kiln;

struct HostBuffer final : sdk::Buffer {
  std::vector<std::byte> bytes;
};

struct AddProgram final : sdk::Program {
  int32_t amount = 0;
};

// "add 5" -> 5; anything else is a compile error with a compiler-style message.
int32_t parse_kernel(std::string_view text) {
  int32_t v = 0;
  if (text.substr(0, 4) != "add " ||
      std::from_chars(text.data() + 4, text.data() + text.size(), v).ec != std::errc())
    throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT, "kernel:1:1: error: expected 'add <integer>', got '" +
                                                       std::string(text.substr(0, 40)) + "'"};
  return v;
}

HostBuffer& host(sdk::Buffer& b) { return static_cast<HostBuffer&>(b); }
const HostBuffer& host(const sdk::Buffer& b) { return static_cast<const HostBuffer&>(b); }

void check(const HostBuffer& b, uint64_t offset, uint64_t n) {
  if (offset > b.bytes.size() || n > b.bytes.size() - offset)
    throw sdk::Error{KILN_STATUS_OUT_OF_RANGE, "access outside a " + std::to_string(b.bytes.size()) + "-byte buffer"};
}

class NullDevice final : public sdk::Device {
 public:
  explicit NullDevice(std::string greeting) : greeting_(std::move(greeting)) {}

  sdk::DeviceProps props() override {
    sdk::DeviceProps p;
    p.name = "null";
    p.description = "null device (" + greeting_ + ")";
    p.arch = "interpreter";
    p.kind = KILN_DEVICE_KIND_ACCELERATOR;
    p.compute_units = 1;
    return p;
  }
  // What the core's code generator may emit for this device: an allow-list. float32 and int32 and
  // the ops every kernel needs (sdk::lir_ops::kRequired: PARAM, RANGE, END, INDEX, LOAD, STORE,
  // CONST, ADD, MUL, CMPLT) are the minimum (`kiln test` level 1 checks it); the core decomposes
  // what it can of any other op into these and refuses kernels that need the rest.
  sdk::Target target() override {
    sdk::Target t;
    t.add_dtype(KILN_LIR_DTYPE_FLOAT32);
    t.add_dtype(KILN_LIR_DTYPE_INT32);
    t.add_ops(sdk::lir_ops::kRequired);
    t.source_format = "null-add";
    return t;
  }
  std::unique_ptr<sdk::Buffer> alloc(uint64_t size, uint32_t) override {
    auto b = std::make_unique<HostBuffer>();
    b->bytes.resize(size);  // zeroed, so KILN_ALLOC_ZERO holds too
    return b;
  }
  void copy_in(sdk::Buffer& dst, uint64_t offset, std::span<const std::byte> src) override {
    check(host(dst), offset, src.size());
    if (!src.empty()) std::memcpy(host(dst).bytes.data() + offset, src.data(), src.size());
  }
  void copy_out(std::span<std::byte> dst, const sdk::Buffer& src, uint64_t offset) override {
    check(host(src), offset, dst.size());
    if (!dst.empty()) std::memcpy(dst.data(), host(src).bytes.data() + offset, dst.size());
  }
  std::string cache_key() override { return "null-add-1"; }
  std::string compile(const sdk::CompileRequest& request, std::string&) override {
    parse_kernel(request.source);
    return std::string(request.source);
  }
  std::unique_ptr<sdk::Program> load(std::string_view binary, std::string_view) override {
    auto p = std::make_unique<AddProgram>();
    p->amount = parse_kernel(binary);
    return p;
  }
  double launch(sdk::Program& program, const sdk::Launch& l) override {
    if (l.buffers.size() != 1) throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT, "add kernels take 1 buffer"};
    HostBuffer& b = host(*l.buffers[0]);
    check(b, l.offset(0), uint64_t{l.global[0]} * 4);
    for (uint32_t i = 0; i < l.global[0]; ++i) {
      int32_t v;
      std::byte* at = b.bytes.data() + l.offset(0) + uint64_t{i} * 4;
      std::memcpy(&v, at, 4);
      v += static_cast<AddProgram&>(program).amount;
      std::memcpy(at, &v, 4);
    }
    return 0;
  }

 private:
  std::string greeting_;
};

class NullPlugin final : public sdk::Plugin {
 public:
  static constexpr const char* plugin_name = "null";
  static constexpr const char* plugin_version = "0.1.0";

  sdk::Probe probe() override { return {1, "always available"}; }
  void initialize(const sdk::Options& options) override { greeting_ = options.get_string("greeting", "hello"); }
  uint32_t device_count() override { return 1; }
  std::unique_ptr<sdk::Device> open(uint32_t index) override {
    // An index past device_count() is the caller's mistake: say so (NOT_FOUND), never open anyway.
    if (index >= device_count())
      throw sdk::Error{KILN_STATUS_NOT_FOUND, "null has 1 device; there is no device " + std::to_string(index)};
    return std::make_unique<NullDevice>(greeting_);
  }

 private:
  std::string greeting_ = "hello";
};

}  // namespace

KILN_PLUGIN(NullPlugin)
