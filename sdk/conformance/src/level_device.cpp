// sdk/conformance/src/level_device.cpp - level 1: device count, properties, target caps, open/close.
#include "kit.hpp"
#include "kiln/sdk/lir.hpp"

namespace kiln::conformance {

namespace {

// Plausibility bounds of target caps (L1.target says why each exists when it fails).
constexpr uint32_t kMaxVectorWidth = 64;
constexpr uint32_t kMaxLaunchSize = 0x7fffffffu;
constexpr uint64_t kMaxSharedBytes = uint64_t{1} << 30;
constexpr uint64_t kMaxCacheBytes = uint64_t{1} << 30;  // a core's L1d or L2
constexpr uint32_t kMaxVectorRegisters = 256, kMaxFmaPipes = 16;  // a core's vector unit
constexpr uint32_t kMaxThreads = 1u << 20;

void count(Kit& k) {
  k.require_usable();
  uint32_t a = 0, b = 0;
  backend::throw_if_error(k.api->device_count(&a), "device_count");
  backend::throw_if_error(k.api->device_count(&b), "device_count");
  require(a == b && a == k.devices, "device_count is not stable: " + std::to_string(k.devices) + ", then " +
                                        std::to_string(a) + ", then " + std::to_string(b));
}

void props(Kit& k) {
  k.require_usable();
  for (uint32_t i = 0; i < k.devices; ++i) {
    std::string name = k.backend + ":" + std::to_string(i);
    backend::Device device = backend::Device::open(name);
    const backend::DeviceProps& p = device.props();
    require(!p.name.empty(), name + ": empty name");
    require(!p.description.empty(), name + ": empty description");
    require(p.kind <= KILN_DEVICE_KIND_ACCELERATOR, name + ": unknown kind " + std::to_string(p.kind));
    require(p.memory_free == 0 || p.memory_total == 0 || p.memory_free <= p.memory_total,
            name + ": memory_free " + std::to_string(p.memory_free) + " > memory_total " + std::to_string(p.memory_total));
  }
}

void target(Kit& k) {
  k.require_usable();
  for (uint32_t i = 0; i < k.devices; ++i) {
    std::string name = k.backend + ":" + std::to_string(i);
    backend::Device device = backend::Device::open(name);
    const backend::TargetCaps& t = device.target();
    require(!t.source_format.empty(), name + ": empty source_format");
    require(t.supports_dtype(KILN_LIR_DTYPE_FLOAT32) && t.supports_dtype(KILN_LIR_DTYPE_INT32),
            name + ": float32 and int32 are required dtypes");
    for (uint32_t op = 1; op < KILN_LIR_OP_COUNT; ++op)
      if (sdk::lir_ops::kRequired.has(op))
        require(t.supports_op(op), name + ": LIR op " + sdk::lir_op_name(op) + " is required (the core cannot decompose it)");
    // Caps bound what the code generator emits: an implausible value is a bug in the plugin
    // (an unset field, a unit mix-up) that would otherwise surface as odd kernels much later.
    uint32_t w = t.max_vector_width;
    require(w >= 1 && w <= kMaxVectorWidth && (w & (w - 1)) == 0,
            name + ": max_vector_width " + std::to_string(w) +
                " is not one of 1, 2, 4, ..., 64 (vectors are split in halves, and no ISA or OpenCL device has wider ones)");
    require(t.local_prod_max >= 1 && t.local_prod_max <= kMaxLaunchSize,
            name + ": local_prod_max " + std::to_string(t.local_prod_max) + " is not in 1..2^31-1 (launch indices are int32)");
    require(t.shared_max <= kMaxSharedBytes, name + ": shared_max " + std::to_string(t.shared_max) +
                                                 " bytes is over 1 GiB (work-group memory is kilobytes on real devices)");
    require(t.threads <= kMaxThreads,
            name + ": threads " + std::to_string(t.threads) + " is over 2^20 (more than any machine runs)");
    for (int d = 0; d < 3; ++d) {
      require(t.global_max[d] >= 1 && t.local_max[d] >= 1, name + ": a global_max or local_max is 0");
      require(t.global_max[d] <= kMaxLaunchSize && t.local_max[d] <= kMaxLaunchSize,
              name + ": global_max[" + std::to_string(d) + "] " + std::to_string(t.global_max[d]) + " or local_max[" +
                  std::to_string(d) + "] " + std::to_string(t.local_max[d]) +
                  " is over 2^31-1 (launch indices are int32)");
      require(t.local_max[d] <= t.local_prod_max || d > 0,
              name + ": local_max[0] " + std::to_string(t.local_max[0]) + " exceeds local_prod_max");
      if (!t.has(KILN_TARGET_HAS_LOCAL))
        require(t.local_max[d] == 1, name + ": local_max must be 1 without KILN_TARGET_HAS_LOCAL");
    }
    if (t.has(KILN_TARGET_HAS_SHARED)) require(t.shared_max > 0, name + ": HAS_SHARED with shared_max 0");
    if (t.has(KILN_TARGET_HAS_THREADS)) require(t.threads >= 1, name + ": HAS_THREADS with 0 threads");
    // 0 is "unknown"; anything else is bytes (a size in KiB, 48 for 48 KiB, is the likely slip)
    for (auto [field, bytes] : {std::pair{"l1d_bytes", t.l1d_bytes}, std::pair{"l2_bytes", t.l2_bytes}})
      require(bytes == 0 || (bytes >= 1024 && bytes <= kMaxCacheBytes),
              name + ": " + field + " " + std::to_string(bytes) + " is not 0 (unknown) or 1 KiB..1 GiB (the field is in bytes)");
    require(!t.l1d_bytes || !t.l2_bytes || t.l1d_bytes <= t.l2_bytes,
            name + ": l1d_bytes " + std::to_string(t.l1d_bytes) + " is larger than l2_bytes " + std::to_string(t.l2_bytes));
    // 0 is "unknown"; a vector unit has a handful to a few hundred registers and a few FMA pipes
    require(t.vector_registers <= kMaxVectorRegisters,
            name + ": vector_registers " + std::to_string(t.vector_registers) + " is not 0 (unknown) or 1..256");
    require(t.fma_pipes <= kMaxFmaPipes, name + ": fma_pipes " + std::to_string(t.fma_pipes) + " is not 0 (unknown) or 1..16");
    // only the 16-bit floats are stored without being computed in (the core converts to float32)
    require((t.storage_dtypes & ~((1u << KILN_LIR_DTYPE_FLOAT16) | (1u << KILN_LIR_DTYPE_BFLOAT16))) == 0,
            name + ": storage_dtypes lists a dtype other than float16 and bfloat16");
  }
}

// Opening and closing many times (the registry keeps its own device 0 open meanwhile).
void open_close(Kit& k) {
  k.require_usable();
  for (int i = 0; i < 50; ++i) {
    kiln_device* dev = nullptr;
    const kiln_device_api* api = nullptr;
    backend::throw_if_error(k.api->device_open(0, &dev, &api), "device_open (cycle " + std::to_string(i) + ")");
    require(dev && api && api->close && api->get_props, "device_open returned no device or an incomplete table");
    kiln_device_props p{};
    p.struct_size = sizeof p;
    kiln_error* e = api->get_props(dev, &p);
    api->close(dev);
    backend::throw_if_error(e, "get_props");
  }
}

void bad_index(Kit& k) {
  k.require_usable();
  kiln_device* dev = nullptr;
  const kiln_device_api* api = nullptr;
  kiln_error* e = k.api->device_open(k.devices, &dev, &api);
  if (!e && dev && api) api->close(dev);
  require(e != nullptr, "device_open(" + std::to_string(k.devices) + ") succeeded although there are " +
                            std::to_string(k.devices) + " devices");
  backend::take_error_message(e);
}

}  // namespace

void add_device_tests(std::vector<TestCase>& t) {
  t.push_back({1, "L1.count", count});
  t.push_back({1, "L1.props", props});
  t.push_back({1, "L1.target", target});
  t.push_back({1, "L1.open_close", open_close});
  t.push_back({1, "L1.bad_index", bad_index});
}

}  // namespace kiln::conformance
