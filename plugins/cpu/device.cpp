// plugins/cpu/device.cpp - properties, target capabilities, and the allocator/compiler/runtime glue.
#include "device.hpp"

#include <cstring>

#include "allocator.hpp"
#include "c_dialect.hpp"
#include "llvm_ir.hpp"
#include "runtime.hpp"
#include "sysinfo.hpp"

namespace kiln::cpu {

namespace {

// A C compiler's flags for an x86-64 level: its -march replaces the host's (-march=native).
CompilerConfig for_isa(CompilerConfig c, const std::string& isa) {
  if (isa.empty()) return c;
  bool replaced = false;
  for (std::string& f : c.flags)
    if (f.rfind("-march=", 0) == 0) f = "-march=" + isa, replaced = true;
  if (!replaced) c.flags.push_back("-march=" + isa);
  return c;
}

}  // namespace

CpuDevice::CpuDevice(const CpuConfig& config)
    : config_(config),
      compiler_(config.compiler.in_process()
                    ? make_llvm_compiler(config.isa, config.avx512bf16 ? "+avx512bf16" : "")
                    : std::make_unique<Compiler>(for_isa(config.compiler, config.isa),
                                                 config.isa.empty() ? cpu_info().features() : config.isa)),
      pool_(config.threads) {}

bool CpuDevice::runnable() const {
  return isa_rank(config_.isa) <= isa_rank(runnable_isa_level()) && (!config_.avx512bf16 || cpu_info().has("avx512_bf16"));
}

bool CpuDevice::bf16_dot() const {
  return config_.isa.empty() ? cpu_info().has("avx512_bf16") && cpu_info().has("avx512vl") : config_.avx512bf16;
}

sdk::DeviceProps CpuDevice::props() {
  const CpuInfo& cpu = cpu_info();
  sdk::DeviceProps p;
  p.name = cpu.model;
  p.arch = config_.isa.empty() ? cpu.isa_level() : config_.isa + (config_.avx512bf16 ? "+avx512bf16" : "");
  p.description = cpu.model + " (" + p.arch + ", " + std::to_string(config_.threads) +
                  (config_.threads == 1 ? " thread)" : " threads)") +
                  (runnable() ? "" : "; compiles only: this host is " + runnable_isa_level());
  p.features = config_.isa.empty() ? cpu.features() : config_.isa + (config_.avx512bf16 ? " avx512_bf16" : "");
  p.kind = KILN_DEVICE_KIND_CPU;
  p.flags = KILN_DEVICE_THREADSAFE | KILN_DEVICE_PEER_BUFFERS;  // every device's buffers are host memory
  p.memory_total = cpu.memory_total;
  p.memory_free = memory_available();
  p.compute_units = cpu.cores;
  return p;
}

sdk::Target CpuDevice::target() {
  const CpuInfo& cpu = cpu_info();
  sdk::Target t;
  const bool fma = config_.isa.empty() ? cpu.has("fma") : isa_rank(config_.isa) >= 3;
  t.flags = KILN_TARGET_HAS_THREADS | (fma ? KILN_TARGET_HAS_FMA : 0u);
  // LLVM IR has masked vector loads and stores (llvm.masked.*); the C renderer gates scalars only
  if (config_.compiler.in_process()) t.flags |= KILN_TARGET_HAS_MASKED_VECTORS;
  t.threads = config_.threads;
  t.global_max = {0x7fffffffu, 0x7fffffffu, 0x7fffffffu};  // work-item indices are int32
  t.local_max = {1, 1, 1};
  t.local_prod_max = 1;
  // float lanes per register
  t.max_vector_width = !config_.isa.empty() ? isa_float_lanes(config_.isa) : cpu.has("avx512f") ? 16 : cpu.has("avx") ? 8 : 4;
  // What the renderer in use handles; the core decomposes the rest (transcendentals, half types).
  uint64_t c_ops[2];
  c_dialect_caps(c_ops, t.dtypes);  // both renderers take the same dtypes
  const bool avx512 = config_.isa.empty() ? cpu.has("avx512f") : isa_rank(config_.isa) >= 4;
  t.ops = (config_.compiler.in_process() ? llvm_ir_ops(avx512, bf16_dot()) : c_dialect_ops()).bits();
  t.source_format = config_.compiler.in_process() ? "llvm-ir" : "c";
  // float16 in memory, float32 in registers: LLVM's fpext/fptrunc of `half` are F16C's
  // vcvtph2ps/vcvtps2ph (exact, round to nearest even) where the ISA has F16C (x86-64-v3 and up);
  // without it they are libcalls (__extendhfsf2) the in-process ELF loader does not resolve, and
  // the core emulates float16 with integers. bfloat16 stays emulated: its integer conversions are
  // exact, where AVX512-BF16's vcvtneps2bf16 flushes subnormals.
  const bool f16c = config_.isa.empty() ? cpu.has("f16c") : isa_rank(config_.isa) >= 3;
  if (config_.compiler.in_process() && f16c) t.storage_dtypes = 1u << KILN_LIR_DTYPE_FLOAT16;
  // the vector unit the ISA level names: AVX-512's 32 registers, else x86-64's 16; two FMA pipes
  // with FMA (x86-64-v3 and up: Haswell, Zen and later cores), else a multiply and an add pairing up;
  // the host's own where it is known to start fewer full-width ones (Zen 4's AVX-512: one)
  t.vector_registers = avx512 ? 32 : 16;
  t.fma_pipes = fma ? 2 : 1;
  if (const uint32_t host = full_width_fma_pipes(cpu); config_.isa.empty() && avx512 && host) t.fma_pipes = host;
  if (runnable()) {  // a device that compiles for another machine does not know that one's caches
    t.l1d_bytes = cpu.caches.l1d;
    t.l2_bytes = cpu.caches.l2;
  }
  return t;
}

std::unique_ptr<sdk::Buffer> CpuDevice::alloc(uint64_t size, uint32_t flags) { return allocate(size, flags); }

void CpuDevice::copy_in(sdk::Buffer& dst, uint64_t offset, std::span<const std::byte> src) {
  auto& b = static_cast<CpuBuffer&>(dst);
  check_range(b, offset, src.size(), "copy_in");
  if (!src.empty()) std::memcpy(b.data + offset, src.data(), src.size());
}

void CpuDevice::copy_out(std::span<std::byte> dst, const sdk::Buffer& src, uint64_t offset) {
  const auto& b = static_cast<const CpuBuffer&>(src);
  check_range(b, offset, dst.size(), "copy_out");
  if (!dst.empty()) std::memcpy(dst.data(), b.data + offset, dst.size());
}

void CpuDevice::copy_from_peer(sdk::Buffer& dst, uint64_t dst_offset, sdk::Device& src_device, const sdk::Buffer& src,
                               uint64_t src_offset, uint64_t n) {
  if (!dynamic_cast<CpuDevice*>(&src_device))
    throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT, "copy_peer: the source device is not a cpu device"};
  copy(dst, dst_offset, src, src_offset, n);
}

void* CpuDevice::host_address(const sdk::Buffer& buffer) { return static_cast<const CpuBuffer&>(buffer).data; }

std::unique_ptr<sdk::Buffer> CpuDevice::wrap_host(void* address, uint64_t size) { return wrap(address, size); }

void CpuDevice::copy(sdk::Buffer& dst, uint64_t dst_offset, const sdk::Buffer& src, uint64_t src_offset, uint64_t n) {
  auto& d = static_cast<CpuBuffer&>(dst);
  const auto& s = static_cast<const CpuBuffer&>(src);
  check_range(d, dst_offset, n, "copy (destination)");
  check_range(s, src_offset, n, "copy (source)");
  if (n) std::memmove(d.data + dst_offset, s.data + src_offset, n);
}

std::string CpuDevice::cache_key() { return compiler_->cache_key(); }

std::string CpuDevice::compile(const sdk::CompileRequest& request, std::string& log) {
  return compiler_->compile(std::string(request.source), std::string(request.entry), std::string(request.options), log);
}

std::unique_ptr<sdk::Program> CpuDevice::load(std::string_view binary, std::string_view entry) {
  if (!runnable())
    throw sdk::Error{KILN_STATUS_UNAVAILABLE, "this cpu device compiles for " + config_.isa + ", which this host (" +
                                                  runnable_isa_level() + ") cannot run; its kernels can be compiled "
                                                  "(kiln compile), not loaded. Use isa = \"native\" or a level up to " +
                                                  runnable_isa_level() + (cpu_info().has("avx512_bf16") ? "" : " without +avx512bf16")};
  return load_program(binary, entry);
}

double CpuDevice::launch(sdk::Program& program, const sdk::Launch& launch) {
  return launch_program(pool_, static_cast<CpuProgram&>(program), launch);
}

}  // namespace kiln::cpu
