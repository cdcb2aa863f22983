// plugins/opencl/device.cpp - enumeration, context and queue, properties, target caps, memory.
#include "device.hpp"

#include <algorithm>
#include <chrono>

#include "../common/plugin_util.hpp"
#include "opencl_c.hpp"

namespace kiln::opencl {

std::vector<ClDeviceRef> enumerate_devices(DeviceType type) {
  const ClApi& api = cl();
  cl_uint n_platforms = 0;
  cl_int s = api.clGetPlatformIDs(0, nullptr, &n_platforms);
  if (s == -1001 /* CL_PLATFORM_NOT_FOUND_KHR: the ICD loader found no driver */ || n_platforms == 0) return {};
  cl_check(s, "clGetPlatformIDs");
  std::vector<cl_platform_id> platforms(n_platforms);
  cl_check(api.clGetPlatformIDs(n_platforms, platforms.data(), nullptr), "clGetPlatformIDs");
  cl_device_type want = type == DeviceType::gpu           ? CL_DEVICE_TYPE_GPU
                        : type == DeviceType::cpu         ? CL_DEVICE_TYPE_CPU
                        : type == DeviceType::accelerator ? CL_DEVICE_TYPE_ACCELERATOR
                                                          : CL_DEVICE_TYPE_ALL;
  std::vector<std::pair<int, ClDeviceRef>> found;
  for (cl_platform_id p : platforms) {
    cl_uint n = 0;
    s = api.clGetDeviceIDs(p, want, 0, nullptr, &n);
    if (s == CL_DEVICE_NOT_FOUND || n == 0) continue;
    cl_check(s, "clGetDeviceIDs");
    std::vector<cl_device_id> ids(n);
    cl_check(api.clGetDeviceIDs(p, want, n, ids.data(), nullptr), "clGetDeviceIDs");
    for (cl_device_id d : ids) {
      auto t = device_value<cl_device_type>(d, CL_DEVICE_TYPE);
      found.push_back({(t & CL_DEVICE_TYPE_CPU) ? 1 : 0, {p, d}});  // opencl:0 is the best device
    }
  }
  std::stable_sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<ClDeviceRef> out;
  for (auto& [rank, ref] : found) out.push_back(ref);
  return out;
}

OpenclDevice::OpenclDevice(const ClDeviceRef& ref, uint32_t index, const OpenclConfig& config)
    : ref_(ref), name_("opencl:" + std::to_string(index)), config_(config) {
  const ClApi& api = cl();
  cl_int s = CL_SUCCESS;
  cl_context_properties props[] = {CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(ref.platform), 0};
  context_ = api.clCreateContext(props, 1, &ref.device, nullptr, nullptr, &s);
  cl_check(s, "clCreateContext");
  queue_ = api.clCreateCommandQueue(context_, ref.device, CL_QUEUE_PROFILING_ENABLE, &s);
  if (s != CL_SUCCESS) {
    api.clReleaseContext(context_);
    cl_fail(s, "clCreateCommandQueue");
  }
  max_alloc_ = device_value<cl_ulong>(ref.device, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
  base_align_ = std::max<uint64_t>(1, device_value<cl_uint>(ref.device, CL_DEVICE_MEM_BASE_ADDR_ALIGN) / 8);
  cache_bytes_ = config.streaming_bytes ? config.streaming_bytes : device_value<cl_ulong>(ref.device, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE);
  const std::string extensions = " " + device_string(ref.device, CL_DEVICE_EXTENSIONS) + " ";
  half_ = extensions.find(" cl_khr_fp16 ") != std::string::npos ? HalfSupport::native : HalfSupport::storage;
  if (config.frontend != Frontend::driver) {
    std::string why_not;
    frontend_ = clang_frontend(config, ref.device, why_not);
    if (frontend_) frontend_key_ = "|bitcode by " + config.clang;
    else if (config.frontend == Frontend::clang) {
      api.clReleaseCommandQueue(queue_);
      api.clReleaseContext(context_);
      throw sdk::Error{KILN_STATUS_FAILED_PRECONDITION,
                       name_ + " cannot compile with clang (option frontend = \"clang\"): " + why_not +
                           "; use frontend = \"auto\" or \"driver\""};
    }
  }
  if (config.prewarm) start_prewarm();
}

// How long an opened device waits for real work before warming the compiler anyway.
constexpr auto kPrewarmGrace = std::chrono::milliseconds(50);

void OpenclDevice::start_prewarm() {
  // a copy: a build may drop frontend_ while this runs
  prewarm_ = std::thread([this, context = context_, device = ref_.device, frontend = frontend_] {
    {
      std::unique_lock<std::mutex> lock(prewarm_mu_);
      prewarm_cv_.wait_for(lock, kPrewarmGrace, [this] { return prewarm_state_ != Warm::waiting; });
      if (prewarm_state_ == Warm::cancelled) return;
    }
    // Errors do not matter here: a real build reports them.
    const ClApi& api = cl();
    const char* source = "__kernel void kiln_prewarm(__global int* a) { a[get_global_id(0)] = 0; }";
    cl_int s = CL_SUCCESS;
    cl_program p = nullptr;
    if (frontend) {  // the same path as real builds (this also pages clang in)
      std::string log, bitcode;
      try {
        bitcode = frontend->compile(source, "", log);
      } catch (const sdk::Error&) {
        return;
      }
      const auto* bytes = reinterpret_cast<const unsigned char*>(bitcode.data());
      size_t size = bitcode.size();
      p = api.clCreateProgramWithBinary(context, 1, &device, &size, &bytes, nullptr, &s);
    } else {
      p = api.clCreateProgramWithSource(context, 1, &source, nullptr, &s);
    }
    if (s != CL_SUCCESS) return;
    api.clBuildProgram(p, 1, &device, "", nullptr, nullptr);
    api.clReleaseProgram(p);
  });
}

void OpenclDevice::settle_prewarm(Warm decision, bool always) {
  if (!prewarm_.joinable() || (prewarm_settled_.exchange(true, std::memory_order_relaxed) && !always)) return;
  {
    std::lock_guard<std::mutex> lock(prewarm_mu_);
    if (prewarm_state_ == Warm::waiting) prewarm_state_ = decision;
  }
  prewarm_cv_.notify_one();
}

OpenclDevice::~OpenclDevice() {
  if (prewarm_.joinable()) {
    settle_prewarm(Warm::cancelled, /*always=*/true);
    prewarm_.join();
  }
  const ClApi& api = cl();
  for (const Built& b : built_) api.clReleaseProgram(b.program);
  api.clFinish(queue_);
  api.clReleaseCommandQueue(queue_);
  api.clReleaseContext(context_);
}

sdk::DeviceProps OpenclDevice::props() {
  cl_device_id d = ref_.device;
  sdk::DeviceProps p;
  p.name = device_string(d, CL_DEVICE_NAME);
  std::string platform = platform_string(ref_.platform, CL_PLATFORM_NAME);
  p.compute_units = device_value<cl_uint>(d, CL_DEVICE_MAX_COMPUTE_UNITS);
  std::string version = device_string(d, CL_DEVICE_VERSION);  // "OpenCL 3.0 <driver text>"
  size_t cut = version.find(' ', version.find(' ') + 1);
  p.description = p.name + " (" + platform + ", " + version.substr(0, cut) + ", " +
                  std::to_string(p.compute_units) + " compute units)";
  // GPUs name their architecture (gfx1030, sm_86); CPU drivers put it in the device name
  p.arch = p.name;
  p.features = device_string(d, CL_DEVICE_EXTENSIONS);
  auto type = device_value<cl_device_type>(d, CL_DEVICE_TYPE);
  p.kind = (type & CL_DEVICE_TYPE_GPU)           ? KILN_DEVICE_KIND_GPU
           : (type & CL_DEVICE_TYPE_ACCELERATOR) ? KILN_DEVICE_KIND_ACCELERATOR
                                                 : KILN_DEVICE_KIND_CPU;
  p.memory_total = device_value<cl_ulong>(d, CL_DEVICE_GLOBAL_MEM_SIZE);
  return p;
}

sdk::Target OpenclDevice::target() {
  cl_device_id d = ref_.device;
  sdk::Target t;
  std::string ext = " " + device_string(d, CL_DEVICE_EXTENSIONS) + " ";
  bool fp64 = ext.find(" cl_khr_fp64 ") != std::string::npos || device_value<cl_ulong>(d, CL_DEVICE_DOUBLE_FP_CONFIG) != 0;
  t.flags = KILN_TARGET_HAS_LOCAL;
  // Shared memory by default only where it is its own fast memory (CL_LOCAL). CPU devices such
  // as PoCL's emulate it in global memory (CL_GLOBAL) and pay for every barrier: grouped
  // reductions through it measured 7x (sum 16M) to 1600x (matmul 256) slower there than loops.
  bool dedicated = device_value<cl_device_local_mem_type>(d, CL_DEVICE_LOCAL_MEM_TYPE) == CL_LOCAL;
  bool shared = config_.shared_memory == SharedMemory::on || (config_.shared_memory == SharedMemory::automatic && dedicated);
  if (shared && device_value<cl_ulong>(d, CL_DEVICE_LOCAL_MEM_SIZE) > 0) t.flags |= KILN_TARGET_HAS_SHARED;
  if (device_value<cl_device_fp_config>(d, CL_DEVICE_SINGLE_FP_CONFIG) & CL_FP_FMA) t.flags |= KILN_TARGET_HAS_FMA;
  if (config_.vector_memory_only) t.flags |= KILN_TARGET_VECTOR_MEMORY_ONLY;
  size_t items[3] = {1, 1, 1};
  cl_check(cl().clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof items, items, nullptr), "clGetDeviceInfo");
  for (int i = 0; i < 3; ++i) {
    t.local_max[i] = static_cast<uint32_t>(std::min<size_t>(items[i], 0x7fffffff));
    t.global_max[i] = 0x7fffffffu;  // workgroup ids are rendered as int
  }
  t.local_prod_max = static_cast<uint32_t>(std::min<size_t>(device_value<size_t>(d, CL_DEVICE_MAX_WORK_GROUP_SIZE), 0x7fffffff));
  t.shared_max = device_value<cl_ulong>(d, CL_DEVICE_LOCAL_MEM_SIZE);
  uint32_t width = config_.vector_width;
  if (width == 0) {
    width = device_value<cl_uint>(d, CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT);
    // CPU drivers (PoCL) vectorise across work items themselves, and compile big explicitly
    // vectorised register tiles slowly: 16 lanes made first calls of matmul-like kernels ~1.5x
    // slower to build than 8, for a faster run that kiln did not need to beat the peers
    if (device_value<cl_device_type>(d, CL_DEVICE_TYPE) & CL_DEVICE_TYPE_CPU) width = std::min<uint32_t>(width, 8);
  }
  t.max_vector_width = width >= 16 ? 16 : width >= 8 ? 8 : width >= 4 ? 4 : width >= 2 ? 2 : 1;
  opencl_caps(t.ops.data(), t.dtypes, t.storage_dtypes, half_ == HalfSupport::native, fp64);
  t.source_format = "opencl-c";
  return t;
}

std::string OpenclDevice::render(const kiln_lir& kernel) {
  OpenclDialect dialect(cache_bytes_ ? cache_bytes_ : uint64_t{32} << 20, half_);
  return dialect.render_kernel(kernel);
}

void OpenclDevice::synchronize() { cl_check(cl().clFinish(queue_), "clFinish"); }

// ---- memory ----

OpenclBuffer::~OpenclBuffer() {
  const ClApi& api = cl();
  for (auto& [offset, view] : views) api.clReleaseMemObject(view);
  if (mem) api.clReleaseMemObject(mem);
}

namespace {

void check_range(const OpenclBuffer& b, uint64_t offset, uint64_t n, const char* what) {
  plugins::check_range(b.size, offset, n, what);
}

}  // namespace

std::unique_ptr<sdk::Buffer> OpenclDevice::alloc(uint64_t size, uint32_t flags) {
  settle_prewarm(Warm::go);
  if (size > max_alloc_)
    throw sdk::Error{KILN_STATUS_RESOURCE_EXHAUSTED,
                     name_ + ": cannot allocate " + std::to_string(size) + " bytes: the device's largest allocation is " +
                         std::to_string(max_alloc_) + " bytes (CL_DEVICE_MAX_MEM_ALLOC_SIZE)"};
  auto b = std::make_unique<OpenclBuffer>();
  b->size = size;
  cl_int s = CL_SUCCESS;
  b->mem = cl().clCreateBuffer(context_, CL_MEM_READ_WRITE, size ? size : 1, nullptr, &s);
  if (s != CL_SUCCESS) cl_fail(s, name_ + ": clCreateBuffer(" + std::to_string(size) + " bytes)");
  if ((flags & KILN_ALLOC_ZERO) && size) {
    cl_uchar zero = 0;
    cl_check(cl().clEnqueueFillBuffer(queue_, b->mem, &zero, 1, 0, size, 0, nullptr, nullptr), "clEnqueueFillBuffer");
  }
  return b;
}

void OpenclDevice::copy_in(sdk::Buffer& dst, uint64_t offset, std::span<const std::byte> src) {
  auto& b = static_cast<OpenclBuffer&>(dst);
  check_range(b, offset, src.size(), "copy_in");
  if (src.empty()) return;
  // blocking: the host's memory is only borrowed for this call
  cl_check(cl().clEnqueueWriteBuffer(queue_, b.mem, CL_TRUE, offset, src.size(), src.data(), 0, nullptr, nullptr),
           "clEnqueueWriteBuffer");
}

void OpenclDevice::copy_out(std::span<std::byte> dst, const sdk::Buffer& src, uint64_t offset) {
  const auto& b = static_cast<const OpenclBuffer&>(src);
  check_range(b, offset, dst.size(), "copy_out");
  if (dst.empty()) return;
  cl_check(cl().clEnqueueReadBuffer(queue_, b.mem, CL_TRUE, offset, dst.size(), dst.data(), 0, nullptr, nullptr),
           "clEnqueueReadBuffer");
}

void OpenclDevice::copy(sdk::Buffer& dst, uint64_t dst_offset, const sdk::Buffer& src, uint64_t src_offset, uint64_t n) {
  auto& d = static_cast<OpenclBuffer&>(dst);
  const auto& s = static_cast<const OpenclBuffer&>(src);
  check_range(d, dst_offset, n, "copy (destination)");
  check_range(s, src_offset, n, "copy (source)");
  if (n == 0) return;
  bool overlap = d.mem == s.mem && dst_offset < src_offset + n && src_offset < dst_offset + n;
  if (overlap) {  // OpenCL forbids overlapping copies (CL_MEM_COPY_OVERLAP): go through the host
    std::vector<std::byte> tmp(n);
    copy_out(tmp, s, src_offset);
    copy_in(d, dst_offset, tmp);
    return;
  }
  cl_check(cl().clEnqueueCopyBuffer(queue_, s.mem, d.mem, src_offset, dst_offset, n, 0, nullptr, nullptr),
           "clEnqueueCopyBuffer");
}

cl_mem OpenclDevice::launch_view(OpenclBuffer& b, uint64_t offset, const std::string& entry) {
  if (offset == 0) return b.mem;
  for (auto& [o, view] : b.views)
    if (o == offset) return view;
  if (offset > b.size)
    throw sdk::Error{KILN_STATUS_OUT_OF_RANGE, "kernel '" + entry + "': offset " + std::to_string(offset) +
                                                   " is past the buffer's " + std::to_string(b.size) + " bytes"};
  if (offset % base_align_ != 0)
    throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT,
                     "kernel '" + entry + "': buffer offset " + std::to_string(offset) + " is not a multiple of " +
                         std::to_string(base_align_) + " bytes (CL_DEVICE_MEM_BASE_ADDR_ALIGN), which OpenCL requires"};
  cl_buffer_region region{offset, std::max<uint64_t>(1, b.size - offset)};
  cl_int s = CL_SUCCESS;
  cl_mem view = cl().clCreateSubBuffer(b.mem, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region, &s);
  cl_check(s, "clCreateSubBuffer");
  b.views.push_back({offset, view});
  return view;
}

}  // namespace kiln::opencl
