// runtime/prepared.cpp - preparing schedule calls once, binding them to buffers, launching them.
#include "runtime/prepared.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <iterator>

#include "ir/traverse.hpp"
#include "kiln/profile.hpp"
#include "plugin/device.hpp"
#include "runtime/buffer.hpp"
#include "runtime/device_alloc.hpp"
#include "runtime/program_cache.hpp"
#include "runtime/runtime.hpp"
#include "support/check.hpp"
#include "support/env.hpp"
#include "support/trace.hpp"
#include "symbolic/interpret.hpp"

namespace kiln::runtime {

namespace {

constexpr size_t kMaxBuffers = 64, kMaxVars = 32;  // (vars: a graph's 16 lifted scalars and its own variables)

// Device handles by name, resolved once per prepare_kernels call; null for host memory.
class DeviceNames {
 public:
  std::shared_ptr<Device> handle(const std::string& name) {
    if (is_host_memory(name)) return nullptr;
    for (auto& [n, d] : seen_)
      if (n == name) return d;
    return seen_.emplace_back(name, open_device(name)).second;
  }

 private:
  std::vector<std::pair<std::string, std::shared_ptr<Device>>> seen_;
};

uint32_t value_slot(const VarVals& vals, const std::string& var, const std::string& kernel) {
  for (size_t i = 0; i < vals.size(); ++i)
    if (vals[i].first == var) return static_cast<uint32_t>(i);
  fail(ErrorCode::invalid_argument, "kernel ", kernel, " needs a value for variable '", var, "'");
}

// Variable slots, then the launch dims: constant ones are checked and stored now, symbolic ones
// record their variables' value slots for bind_call().
void resolve_launch(PreparedKernel& p, const VarVals& vals) {
  const ProgramSpec& spec = p.kernel->spec;
  KILN_CHECK(spec.var_names.size() <= kMaxVars, "kernel ", p.name, " has more than ", kMaxVars, " variables");
  for (const std::string& v : spec.var_names) p.var_slots.push_back(value_slot(vals, v, p.name));
  for (int d = 0; d < 3; ++d)
    for (const UOp& dim : {spec.dims.global[d], spec.dims.local[d]})
      if (!dim.is_const()) p.static_dims = false;
  if (!p.static_dims) {
    std::vector<UOp> roots;
    for (int d = 0; d < 3; ++d) roots.insert(roots.end(), {spec.dims.global[d], spec.dims.local[d]});
    for (const UOp& u : toposort(UOp::sink(roots)))
      if (u.op() == Ops::DEFINE_VAR) p.dim_vars.push_back({u, value_slot(vals, std::get<NamedInts>(u.arg()).name, p.name)});
    return;
  }
  const Target& target = p.device->target();
  for (int d = 0; d < 3; ++d) {
    int64_t g = spec.dims.global[d].arg_int(), l = spec.dims.local[d].arg_int();
    check_launch_size(target, p.name, d, g, l);
    p.global[d] = static_cast<uint32_t>(g);
    p.local[d] = static_cast<uint32_t>(l);
  }
}

// A symbolic launch dim for these values.
int64_t eval_dim(const PreparedKernel& p, const UOp& d, const VarVals& vals) {
  if (d.is_const()) return d.arg_int();
  Assignment a;
  for (const auto& [var, slot] : p.dim_vars) a.push_back({var, Value{vals[slot].second}});
  auto v = interpret(d, a);
  KILN_CHECK(v, "launch size of kernel ", p.name, " is undefined");
  return as_int(*v);
}

void log_time(const PreparedKernel& p, std::chrono::steady_clock::time_point t0) {
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  log_line(cat(p.device_name, "  ", p.name, "  ", ms, " ms"));
}

}  // namespace

bool PreparedKernel::current() const {
  return kind != CallKind::kernel || (generation == program_cache_generation() && noopt == knob(Knob::noopt));
}

std::vector<std::shared_ptr<const PreparedKernel>> prepare_kernels(std::span<const CallRef> calls) {
  DeviceNames names;
  std::vector<std::shared_ptr<PreparedKernel>> out;
  std::vector<std::pair<std::shared_ptr<Device>, UOp>> to_build;
  uint64_t generation = program_cache_generation();
  for (const CallRef& c : calls) {
    auto p = std::make_shared<PreparedKernel>();
    p->ast = c.body;
    p->n_values = c.vals->size();
    p->generation = generation;
    p->noopt = knob(Knob::noopt);
    const std::string& device = buffer_device(c.buffers[0]);
    p->device_name = device;
    KILN_CHECK(c.buffers.size() <= kMaxBuffers, "kernel ", c.body.arg_string(), " has more than ", kMaxBuffers, " buffers");
    if (c.body.op() == Ops::COPY) {
      p->kind = CallKind::copy;
      p->name = cat("copy ", buffer_bytes(c.buffers[0]), " bytes ", buffer_device(c.buffers[1]), " -> ", device);
      p->device = names.handle(device);
      p->src_device = names.handle(buffer_device(c.buffers[1]));
    } else {
      p->name = c.body.arg_string();
      p->written = 0;
      for (const UOp& u : toposort(c.body))
        if (u.op() == Ops::STORE && u.src(0).op() == Ops::INDEX && u.src(0).src(0).op() == Ops::PARAM)
          p->written |= uint64_t{1} << u.src(0).src(0).arg_int();
      if (!p->written) p->written = ~uint64_t{0};  // not a plain store to a parameter: take every buffer as written
      if (device == kRefDevice) {
        p->kind = CallKind::reference;
      } else {
        p->device = names.handle(device);
        KILN_CHECK(p->device, "kernel ", p->name, " on host memory");
        to_build.push_back({p->device, c.body});
      }
    }
    out.push_back(std::move(p));
  }
  build_kernels(to_build);  // compile what is new, in parallel, before anything runs
  for (size_t i = 0; i < out.size(); ++i) {
    PreparedKernel& p = *out[i];
    if (p.kind != CallKind::kernel) continue;
    p.kernel = get_kernel(p.device, p.ast);
    resolve_launch(p, *calls[i].vals);
  }
  return {out.begin(), out.end()};
}

PreparedItem bind_call(std::shared_ptr<const PreparedKernel> kernel, std::span<const UOp> buffers, const VarVals& vals) {
  std::vector<const UOp*> refs;
  for (const UOp& b : buffers) refs.push_back(&b);
  std::vector<std::shared_ptr<Storage>> storages(buffers.size());
  storages_of(refs, storages.data());
  return bind_call(std::move(kernel), buffers, std::move(storages), vals);
}

PreparedItem bind_call(std::shared_ptr<const PreparedKernel> kernel, std::span<const UOp> buffers,
                       std::vector<std::shared_ptr<Storage>> storages, const VarVals& vals) {
  const PreparedKernel& p = *kernel;
  KILN_CHECK(vals.size() == p.n_values, "kernel ", p.name, " was prepared for ", p.n_values, " values, bound to ", vals.size());
  PreparedItem it;
  it.storages = std::move(storages);
  switch (p.kind) {
    case CallKind::copy: {
      it.copy_bytes = buffer_bytes(buffers[1]);
      KILN_CHECK(buffer_bytes(buffers[0]) == it.copy_bytes, "copy between buffers of different sizes");
      it.storages[0]->ensure_allocated(p.device);
      it.storages[1]->ensure_allocated(p.src_device);
      break;
    }
    case CallKind::reference:
      for (size_t i = 0; i < buffers.size(); ++i) it.host.push_back({it.storages[i]->host_ptr(), buffer_bytes(buffers[i])});
      break;
    case CallKind::kernel: {
      for (auto& s : it.storages) {
        s->ensure_allocated(p.device);
        it.handles.push_back(s->device_buffer());
      }
      break;
    }
  }
  it.kernel = std::move(kernel);
  bind_values(it, vals);
  return it;
}

void bind_values(PreparedItem& it, const VarVals& vals) {
  const PreparedKernel& p = *it.kernel;
  if (p.kind == CallKind::reference) {
    it.named = vals;
    return;
  }
  if (p.kind != CallKind::kernel) return;
  it.values.clear();  // (keeps its capacity: a replay allocates nothing)
  for (uint32_t slot : p.var_slots) it.values.push_back(vals[slot].second);
  const ProgramSpec& spec = p.kernel->spec;
  for (int d = 0; d < 3; ++d) {
    if (p.static_dims) {
      it.global[d] = p.global[d];
      it.local[d] = p.local[d];
      continue;
    }
    int64_t g = eval_dim(p, spec.dims.global[d], vals), l = eval_dim(p, spec.dims.local[d], vals);
    check_launch_size(p.device->target(), p.name, d, g, l);
    it.global[d] = static_cast<uint32_t>(g);
    it.local[d] = static_cast<uint32_t>(l);
  }
}

void PreparedItem::run() const {
  const PreparedKernel& p = *kernel;
  bool logged = debug_level() >= 2, traced = trace::on();
  auto t0 = std::chrono::steady_clock::now();
  const int64_t start_ns = traced ? trace::now_ns() : 0;
  if (p.kind == CallKind::copy) {
    Storage &dst = *storages[0], &src = *storages[1];
    if (dst.is_host() && src.is_host()) {
      if (copy_bytes) std::memcpy(dst.host_ptr(), src.host_ptr(), copy_bytes);
    } else {
      copy_between_devices(dst, src, copy_bytes);
    }
    if (logged) log_time(p, t0);
    if (traced)
      trace::event("copy", cat("copy ", copy_bytes, " bytes"), start_ns, trace::now_ns(), p.device_name,
                   cat("\"from\": \"", src.device(), "\""));
    return;
  }
  // A kernel whose output has no elements has nothing to do; launching it is not harmless: a
  // kernel over a shape with a 0 dimension (e.g. (0, 10, 10)) can be optimized as if the other
  // dimensions were its whole range and store into the empty output's (0-byte) allocation.
  if (!storages.empty() && storages[0] && storages[0]->bytes() == 0) return;
  if (p.kind == CallKind::reference) {
    run_reference_kernel(p.ast, host, named);
    if (logged) log_time(p, t0);
    if (traced) trace::event("launch", p.name, start_ns, trace::now_ns(), p.device_name);
    return;
  }
  // a Profile, KILN_DEBUG=2 and KILN_TRACE wait for the kernel and time it
  bool profiled = Profile::active(), timed = profiled || logged || traced;
  Device& dev = *p.device;
  const Kernel& k = *p.kernel;
  double s = dev.launch(*k.program, handles, {}, values, global, local, timed);
  if (!timed) return;
  if (s <= 0) s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  KernelRun run{k.spec.name, dev.name(), {global[0], global[1], global[2]}, {local[0], local[1], local[2]}, s,
                k.spec.flops, k.spec.bytes};
  if (profiled) Profile::record(run);
  if (traced) {  // the kernel's time on the device, ending now
    const int64_t end_ns = trace::now_ns();
    trace::event("launch", run.name, std::max(start_ns, end_ns - static_cast<int64_t>(s * 1e9)), end_ns, run.device,
                 cat("\"global\": [", global[0], ", ", global[1], ", ", global[2], "], \"local\": [", local[0], ", ", local[1],
                     ", ", local[2], "]"));
  }
  if (logged)
    log_line(cat(dev.name(), "  ", run.name, "  global=(", global[0], ",", global[1], ",", global[2], ") local=(", local[0],
                 ",", local[1], ",", local[2], ")  ", s * 1e3, " ms  ", run.flops / s * 1e-9, " GFLOP/s  ",
                 run.bytes / s * 1e-9, " GB/s"));
}

std::vector<PreparedItem> PreparedKernels::prepare(const UOp& linear, const VarVals& vals) {
  std::span<const UOp> calls = linear.src();
  std::vector<std::shared_ptr<const PreparedKernel>> kernels;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // the slots index the values by position: the same names in the same order, or prepare again
    // (two graphs with one template may leave different variables unbound)
    bool fresh = kernels_.size() == calls.size() && names_.size() == vals.size();
    for (size_t i = 0; fresh && i < vals.size(); ++i) fresh = names_[i] == vals[i].first;
    for (size_t i = 0; fresh && i < kernels_.size(); ++i) fresh = kernels_[i]->current();
    if (!fresh) {
      std::vector<CallRef> refs;
      for (const UOp& c : calls) refs.push_back({c.src(0), c.src().subspan(1), &vals});
      kernels_ = prepare_kernels(refs);
      names_.clear();
      for (const auto& v : vals) names_.push_back(v.first);
    }
    kernels = kernels_;
  }
  // every call's storages under one lock of the buffer table
  std::vector<const UOp*> buffers;
  for (const UOp& c : calls)
    for (const UOp& b : c.src().subspan(1)) buffers.push_back(&b);
  std::vector<std::shared_ptr<Storage>> storages(buffers.size());
  storages_of(buffers, storages.data());
  std::vector<PreparedItem> items;
  items.reserve(calls.size());
  size_t at = 0;
  for (size_t i = 0; i < calls.size(); ++i) {
    std::span<const UOp> bufs = calls[i].src().subspan(1);
    auto first = storages.begin() + static_cast<std::ptrdiff_t>(at);
    std::vector<std::shared_ptr<Storage>> mine(std::make_move_iterator(first),
                                               std::make_move_iterator(first + static_cast<std::ptrdiff_t>(bufs.size())));
    items.push_back(bind_call(kernels[i], bufs, std::move(mine), vals));
    at += bufs.size();
  }
  return items;
}

void run_schedule(const std::vector<ExecItem>& items) {
  std::vector<CallRef> refs;
  for (const ExecItem& e : items) refs.push_back({e.ast, e.buffers, &e.var_vals});
  std::vector<std::shared_ptr<const PreparedKernel>> kernels = prepare_kernels(refs);
  for (size_t i = 0; i < items.size(); ++i) bind_call(kernels[i], items[i].buffers, items[i].var_vals).run();
}

}  // namespace kiln::runtime
