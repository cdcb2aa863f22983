// plugins/opencl/program.cpp - building kernels, loading binaries and launching NDRanges.
#include <algorithm>
#include <string_view>
#include <utility>

#include "device.hpp"

namespace kiln::opencl {

namespace {

constexpr size_t kKeptBuilds = 32;  // compiled programs kept for their load()

uint64_t fingerprint(std::string_view bytes) { return std::hash<std::string_view>{}(bytes); }

std::string join_options(const std::string& a, std::string_view b) {
  if (a.empty()) return std::string(b);
  if (b.empty()) return a;
  return a + " " + std::string(b);
}

std::string program_binary(cl_program program) {
  const ClApi& api = cl();
  size_t size = 0;
  cl_check(api.clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr), "clGetProgramInfo");
  if (size == 0)
    throw sdk::Error{KILN_STATUS_UNIMPLEMENTED, "the OpenCL driver returned an empty program binary (CL_PROGRAM_BINARIES)"};
  std::string binary(size, '\0');
  unsigned char* ptr = reinterpret_cast<unsigned char*>(binary.data());
  cl_check(api.clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof ptr, &ptr, nullptr), "clGetProgramInfo");
  return binary;
}

// A cl_program released on scope exit unless taken.
struct ProgramRef {
  cl_program p = nullptr;
  ~ProgramRef() {
    if (p) cl().clReleaseProgram(p);
  }
  cl_program take() { return std::exchange(p, nullptr); }
};

}  // namespace

OpenclProgram::~OpenclProgram() {
  if (kernel) cl().clReleaseKernel(kernel);
  if (program) cl().clReleaseProgram(program);
}

std::string OpenclDevice::build_log(cl_program program) const {
  size_t n = 0;
  if (cl().clGetProgramBuildInfo(program, ref_.device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n) != CL_SUCCESS) return "";
  std::string log(n, '\0');
  if (cl().clGetProgramBuildInfo(program, ref_.device, CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr) != CL_SUCCESS) return "";
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n' || log.back() == ' ')) log.pop_back();
  return log;
}

std::string OpenclDevice::cache_key() {
  cl_device_id d = ref_.device;
  return platform_string(ref_.platform, CL_PLATFORM_NAME) + "|" + platform_string(ref_.platform, CL_PLATFORM_VERSION) +
         "|" + device_string(d, CL_DEVICE_NAME) + "|" + device_string(d, CL_DEVICE_VERSION) + "|" +
         device_string(d, CL_DRIVER_VERSION) + "|" + config_.build_options + frontend_key_;
}

std::string OpenclDevice::compile(const sdk::CompileRequest& request, std::string& log) {
  return build(std::span<const sdk::CompileRequest>(&request, 1), log);
}

// Several kernels as one program: one clBuildProgram (one clang run; from source, PoCL's ~150 ms
// front end once). The sources are complete translation units; concatenated, their preludes
// repeat identical macro definitions, which C allows.
std::string OpenclDevice::compile_many(std::span<const sdk::CompileRequest> requests, std::string& log) {
  return build(requests, log);
}

std::string OpenclDevice::build(std::span<const sdk::CompileRequest> requests, std::string& log) {
  settle_prewarm(Warm::cancelled);  // this build initialises the compiler itself
  if (requests.empty()) throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT, "compile_many: no kernels"};
  std::string binary;
  ProgramRef program{build_program(sdk::join_sources(requests), requests.size(), log, binary)};
  if (binary.empty()) binary = program_binary(program.p);
  if (built_.size() == kKeptBuilds) {
    cl().clReleaseProgram(built_.front().program);
    built_.pop_front();
  }
  built_.push_back({fingerprint(binary), binary.size(), static_cast<uint32_t>(requests.size()), program.take()});
  return binary;
}

cl_program OpenclDevice::build_program(const sdk::JoinedSources& joined, size_t kernels, std::string& log,
                                       std::string& bitcode) {
  std::string user_options = join_options(config_.build_options, joined.options);
  // argument info lets load() check how many arguments are buffers
  std::string options = join_options("-cl-kernel-arg-info", user_options);
  auto failure = [&](cl_int s, const std::string& how) {
    std::string what = std::string(kernels == 1 ? "building kernel " : "building kernels ") + joined.entries + " on " +
                       name_ + how + " failed: " + cl_error_name(s) + " (" + std::to_string(s) + ")";
    if (!options.empty()) what += "\nbuild options: " + options;
    return sdk::Error{s == CL_INVALID_BUILD_OPTIONS || s == CL_BUILD_PROGRAM_FAILURE || s == CL_COMPILE_PROGRAM_FAILURE ||
                              s == CL_INVALID_BINARY
                          ? KILN_STATUS_INVALID_ARGUMENT
                          : KILN_STATUS_INTERNAL,
                      what + "\nbuild log:\n" + (log.empty() ? "(empty)" : log)};
  };
  cl_int s = CL_SUCCESS;
  if (frontend_) {
    std::string reason;  // why "auto" goes back to the driver
    bool source_rejected = false;
    try {
      bitcode = frontend_->compile(joined.source, user_options, log);
    } catch (const sdk::Error& e) {
      if (config_.frontend == Frontend::clang)
        throw sdk::Error{e.code, std::string(kernels == 1 ? "compiling kernel " : "compiling kernels ") + joined.entries +
                                     " for " + name_ + " failed: " + e.message};
      reason = e.message;
      source_rejected = e.code == KILN_STATUS_INVALID_ARGUMENT;
    }
    if (!bitcode.empty()) {
      cl_program program = build_program_from_binary(bitcode, options, log, s);
      if (program) return program;
      bitcode.clear();
      sdk::Error e = failure(s, " from " + frontend_->clang() + "'s bitcode");
      if (config_.frontend == Frontend::clang) throw e;
      reason = e.message;
    }
    // frontend = "auto": the driver decides. If it rejects the source too, the source is at fault
    // and clang stays; otherwise clang (or the driver's use of its bitcode) is, and the driver
    // builds from now on.
    cl_program program = build_program_from_source(joined.source, options, log, s);
    if (!program && source_rejected) throw failure(s, "");
    sdk::log(KILN_LOG_WARNING, name_ + ": building with " + frontend_->clang() + " failed where the OpenCL driver " +
                                   (program ? "succeeded" : "failed too") +
                                   "; the driver builds from source from now on (option frontend = \"driver\" "
                                   "skips clang): " + reason);
    frontend_.reset();
    if (!program) throw failure(s, "");
    return program;
  }
  cl_program program = build_program_from_source(joined.source, options, log, s);
  if (!program) throw failure(s, "");
  return program;
}

cl_program OpenclDevice::build_program_from_binary(const std::string& binary, const std::string& options,
                                                   std::string& log, cl_int& s) {
  const ClApi& api = cl();
  const auto* bytes = reinterpret_cast<const unsigned char*>(binary.data());
  size_t size = binary.size();
  cl_int status = CL_SUCCESS;
  ProgramRef program{api.clCreateProgramWithBinary(context_, 1, &ref_.device, &size, &bytes, &status, &s)};
  if (s == CL_SUCCESS) s = status;
  if (s != CL_SUCCESS) return nullptr;
  s = api.clBuildProgram(program.p, 1, &ref_.device, options.c_str(), nullptr, nullptr);
  std::string driver_log = build_log(program.p);
  if (!driver_log.empty()) log = log.empty() ? driver_log : log + "\n" + driver_log;
  return s == CL_SUCCESS ? program.take() : nullptr;
}

cl_program OpenclDevice::build_program_from_source(const std::string& source, const std::string& options,
                                                   std::string& log, cl_int& s) {
  const ClApi& api = cl();
  const char* text = source.data();
  size_t length = source.size();
  ProgramRef program{api.clCreateProgramWithSource(context_, 1, &text, &length, &s)};
  cl_check(s, "clCreateProgramWithSource");
  s = api.clBuildProgram(program.p, 1, &ref_.device, options.c_str(), nullptr, nullptr);
  log = build_log(program.p);
  return s == CL_SUCCESS ? program.take() : nullptr;
}

std::unique_ptr<sdk::Program> OpenclDevice::load(std::string_view binary, std::string_view entry) {
  const ClApi& api = cl();
  auto p = std::make_unique<OpenclProgram>();
  p->entry = std::string(entry);
  uint64_t hash = fingerprint(binary);
  for (auto it = built_.begin(); it != built_.end(); ++it)
    if (it->hash == hash && it->size == binary.size()) {
      p->program = it->program;  // built from source moments ago: no second build
      api.clRetainProgram(p->program);
      if (--it->loads_left == 0) {  // every kernel of it loaded: the list lets go
        api.clReleaseProgram(it->program);
        built_.erase(it);
      }
      break;
    }
  if (!p->program) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(binary.data());
    size_t size = binary.size();
    cl_int status = CL_SUCCESS, s = CL_SUCCESS;
    p->program = api.clCreateProgramWithBinary(context_, 1, &ref_.device, &size, &bytes, &status, &s);
    if (s != CL_SUCCESS || status != CL_SUCCESS) {
      p->program = nullptr;
      cl_fail(s != CL_SUCCESS ? s : status, name_ + ": clCreateProgramWithBinary (" + std::to_string(size) +
                                                 " bytes; not a program binary of this device and driver?)");
    }
    s = api.clBuildProgram(p->program, 1, &ref_.device, config_.build_options.c_str(), nullptr, nullptr);
    if (s != CL_SUCCESS)
      throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT, "building the binary of kernel '" + p->entry + "' on " + name_ +
                                                         " failed: " + cl_error_name(s) + "\nbuild log:\n" +
                                                         build_log(p->program)};
  }
  cl_int s = CL_SUCCESS;
  p->kernel = api.clCreateKernel(p->program, p->entry.c_str(), &s);
  if (s == CL_INVALID_KERNEL_NAME)
    throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT, "the program binary does not define the kernel '" + p->entry + "'"};
  cl_check(s, "clCreateKernel");
  cl_check(api.clGetKernelInfo(p->kernel, CL_KERNEL_NUM_ARGS, sizeof p->n_args, &p->n_args, nullptr), "clGetKernelInfo");
  // Buffers come first (the dialect's convention); argument info, where the driver keeps it,
  // tells how many, so a launch that swaps buffers for values is caught too.
  int64_t buffers = 0;
  for (cl_uint i = 0; i < p->n_args; ++i) {
    cl_kernel_arg_address_qualifier q = 0;
    if (api.clGetKernelArgInfo(p->kernel, i, CL_KERNEL_ARG_ADDRESS_QUALIFIER, sizeof q, &q, nullptr) != CL_SUCCESS) {
      buffers = -1;
      break;
    }
    buffers += q == CL_KERNEL_ARG_ADDRESS_GLOBAL;
  }
  p->n_buffers = buffers;
  return p;
}

double OpenclDevice::launch(sdk::Program& program, const sdk::Launch& l) {
  const ClApi& api = cl();
  auto& p = static_cast<OpenclProgram&>(program);
  size_t n_buffers = l.buffers.size(), n_values = l.values.size();
  if (n_buffers + n_values != p.n_args || (p.n_buffers >= 0 && static_cast<int64_t>(n_buffers) != p.n_buffers)) {
    std::string takes = p.n_buffers >= 0 ? std::to_string(p.n_buffers) + " buffers and " +
                                               std::to_string(p.n_args - p.n_buffers) + " values"
                                         : std::to_string(p.n_args) + " arguments (buffers, then values)";
    throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT, "kernel '" + p.entry + "' takes " + takes + ", the launch passed " +
                                                       std::to_string(n_buffers) + " buffers and " +
                                                       std::to_string(n_values) + " values"};
  }
  for (size_t i = 0; i < n_buffers; ++i) {
    if (!l.buffers[i]) throw sdk::Error{KILN_STATUS_INVALID_ARGUMENT, "kernel '" + p.entry + "': buffer " + std::to_string(i) + " is NULL"};
    cl_mem m = launch_view(static_cast<OpenclBuffer&>(*l.buffers[i]), l.offset(i), p.entry);
    cl_check(api.clSetKernelArg(p.kernel, static_cast<cl_uint>(i), sizeof m, &m), "clSetKernelArg");
  }
  for (size_t i = 0; i < n_values; ++i) {
    cl_long v = l.values[i];
    cl_check(api.clSetKernelArg(p.kernel, static_cast<cl_uint>(n_buffers + i), sizeof v, &v), "clSetKernelArg");
  }
  size_t global[3], local[3];
  cl_uint dims = 1;
  for (int d = 0; d < 3; ++d) {
    if (l.global[d] == 0 || l.local[d] == 0) return 0;  // an empty grid: nothing to run
    global[d] = size_t{l.global[d]} * l.local[d];
    local[d] = l.local[d];
    if (global[d] > 1) dims = static_cast<cl_uint>(d + 1);
  }
  cl_event event = nullptr;
  cl_int s = api.clEnqueueNDRangeKernel(queue_, p.kernel, dims, nullptr, global, local, 0, nullptr, l.wait ? &event : nullptr);
  if (s != CL_SUCCESS)
    cl_fail(s, "clEnqueueNDRangeKernel(kernel '" + p.entry + "', " + std::to_string(l.global[0]) + "x" +
                   std::to_string(l.global[1]) + "x" + std::to_string(l.global[2]) + " workgroups of " +
                   std::to_string(l.local[0]) + "x" + std::to_string(l.local[1]) + "x" + std::to_string(l.local[2]) + ")");
  if (!l.wait) return 0;
  s = api.clWaitForEvents(1, &event);
  cl_ulong start = 0, end = 0;
  if (s == CL_SUCCESS) s = api.clGetEventProfilingInfo(event, CL_PROFILING_COMMAND_START, sizeof start, &start, nullptr);
  if (s == CL_SUCCESS) s = api.clGetEventProfilingInfo(event, CL_PROFILING_COMMAND_END, sizeof end, &end, nullptr);
  api.clReleaseEvent(event);
  cl_check(s, "waiting for the kernel");
  return std::max(1e-9, static_cast<double>(end - start) * 1e-9);  // a finished kernel took some time
}

void OpenclDevice::launch_many(std::span<sdk::Program* const> programs, std::span<const sdk::Launch> launches) {
  try {
    for (size_t i = 0; i < launches.size(); ++i) launch(*programs[i], launches[i]);
  } catch (...) {
    cl().clFlush(queue_);  // the launches before the failing one were submitted (plugin.h)
    throw;
  }
  cl_check(cl().clFlush(queue_), "clFlush");
}

}  // namespace kiln::opencl
