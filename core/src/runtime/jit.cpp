// runtime/jit.cpp - capturing the items a call runs, and replaying them (see jit.hpp).
#include "runtime/jit.hpp"

#include <algorithm>
#include <unordered_map>

#include "kiln/profile.hpp"
#include "support/trace.hpp"
#include "plugin/device.hpp"
#include "runtime/buffer.hpp"
#include "runtime/program_cache.hpp"
#include "runtime/runtime.hpp"
#include "support/check.hpp"
#include "support/env.hpp"

namespace kiln::runtime {

namespace {
thread_local Capture* active_capture = nullptr;
}  // namespace

Capture::Capture() : previous_(active_capture) { active_capture = this; }
Capture::~Capture() { stop(); }
void Capture::stop() {
  if (stopped_) return;
  stopped_ = true;
  active_capture = previous_;
}
Capture* Capture::active() { return active_capture; }

void Capture::record(const std::vector<PreparedItem>& items, const VarVals& v) {
  vals.push_back(v);
  for (const PreparedItem& it : items) steps.push_back({it, vals.size() - 1});
}

namespace {

// Points position `j` of `it` at storage `s` (its handle or host memory, as the item's kind needs).
void point_at(PreparedItem& it, size_t j, const std::shared_ptr<Storage>& s) {
  it.storages[j] = s;
  switch (it.kernel->kind) {
    case CallKind::kernel: it.handles[j] = s->device_buffer(); break;
    case CallKind::reference: it.host[j].data = s->host_ptr(); break;
    case CallKind::copy: break;  // a copy reads its storages when it runs
  }
}

}  // namespace

Plan::Plan(Capture&& capture, std::vector<std::shared_ptr<Storage>> inputs, std::vector<std::string> var_names)
    : vals_(std::move(capture.vals)) {
  for (Capture::Step& s : capture.steps) {
    items_.push_back(std::move(s.item));
    item_vals_.push_back(s.vals);
  }
  capture.steps.clear();

  // input slots: every position that held an input's storage (the first input with that storage)
  for (uint32_t i = 0; i < items_.size(); ++i)
    for (uint32_t j = 0; j < items_[i].storages.size(); ++j)
      for (uint32_t k = 0; k < inputs.size(); ++k)
        if (items_[i].storages[j] == inputs[k]) {
          slots_.push_back({i, j, k});
          break;
        }

  // variables: where each of the call's variables sits in each captured value set, and which items
  // read any (a variable bound inside the function, not passed, keeps its captured value)
  for (uint32_t set = 0; set < vals_.size(); ++set)
    for (uint32_t e = 0; e < vals_[set].size(); ++e)
      for (uint32_t v = 0; v < var_names.size(); ++v)
        if (vals_[set][e].first == var_names[v]) var_uses_.push_back({set, e, v});
  for (uint32_t i = 0; i < items_.size(); ++i) {
    const PreparedKernel& p = *items_[i].kernel;
    if (!p.var_slots.empty() || !p.static_dims || (p.kind == CallKind::reference && !vals_[item_vals_[i]].empty()))
      var_items_.push_back(i);
  }
  plan_intermediates(inputs);
  plan_batches();
  lanes_ = plan_lanes(items_);  // on the planned buffers, inputs bound
  for (const PreparedItem& it : items_)
    for (const auto& st : it.storages)
      if (std::find(inputs.begin(), inputs.end(), st) == inputs.end()) held_.push_back(st.get());
  std::sort(held_.begin(), held_.end());
  held_.erase(std::unique(held_.begin(), held_.end()), held_.end());
  scratch_.resize(inputs.size());
  binding_.resize(inputs.size());
  unbind_inputs();
}

void Plan::unbind_inputs() {
  for (auto& b : binding_) b.reset();
  for (const Slot& s : slots_) {
    PreparedItem& it = items_[s.item];
    it.storages[s.position].reset();
    if (it.kernel->kind == CallKind::kernel) it.handles[s.position] = nullptr;
    if (it.kernel->kind == CallKind::reference) it.host[s.position].data = nullptr;
  }
}

void Plan::plan_batches() {
  for (uint32_t i = 0; i < items_.size();) {
    const PreparedKernel& p = *items_[i].kernel;
    uint32_t end = i + 1;
    if (p.kind == CallKind::kernel && p.device->has_launch_many())
      while (end < items_.size() && items_[end].kernel->kind == CallKind::kernel && items_[end].kernel->device == p.device) ++end;
    if (end - i >= 2) {
      Batch b{i, end, p.device.get(), {}, {}, {}};
      for (uint32_t k = i; k < end; ++k) b.programs.push_back(items_[k].kernel->kernel->program->handle());
      b.params.resize(end - i);
      for (const kiln_launch_params& lp : b.params) b.pointers.push_back(&lp);
      batches_.push_back(std::move(b));
    }
    i = end;
  }
}

void Plan::run_batched() {
  size_t next = 0;  // the next batch
  for (uint32_t i = 0; i < items_.size();) {
    if (next == batches_.size() || batches_[next].begin != i) {
      items_[i++].run();
      continue;
    }
    Batch& b = batches_[next++];
    for (uint32_t k = b.begin; k < b.end; ++k) {
      const PreparedItem& it = items_[k];
      b.params[k - b.begin] = {sizeof(kiln_launch_params),
                               it.handles.data(),
                               nullptr,
                               static_cast<uint32_t>(it.handles.size()),
                               static_cast<uint32_t>(it.values.size()),
                               it.values.data(),
                               {it.global[0], it.global[1], it.global[2]},
                               {it.local[0], it.local[1], it.local[2]},
                               0,
                               0,
                               nullptr};
    }
    b.device->launch_many(b.programs, b.pointers);
    i = b.end;
  }
}

void Plan::plan_intermediates(const std::vector<std::shared_ptr<Storage>>& inputs) {
  // A storage only the plan holds (every reference to it is one of the items') and that the plan
  // writes before it reads it (its first use is an item's first buffer: a kernel's output, a
  // copy's destination) is an intermediate: no tensor can read it and no replay needs what it held
  // before, so its memory may be shared with another whose life does not overlap. Host memory is
  // never one: a constant made inside the function lives there, written once when it was built.
  // (A multi-output kernel's second output is left out: safe, only less sharing.)
  struct Life {
    std::shared_ptr<Storage> storage;
    long refs = 0;
    size_t first = 0, last = 0;
    bool written_first = false;
  };
  std::vector<Life> lives;
  std::unordered_map<const Storage*, size_t> index;
  for (size_t i = 0; i < items_.size(); ++i)
    for (size_t j = 0; j < items_[i].storages.size(); ++j) {
      const auto& s = items_[i].storages[j];
      auto [it, fresh] = index.try_emplace(s.get(), lives.size());
      if (fresh) lives.push_back({s, 0, i, i, j == 0});
      Life& l = lives[it->second];
      l.refs++;
      l.last = i;
    }
  std::vector<Life*> internal;
  for (Life& l : lives) {
    const bool is_input = std::find(inputs.begin(), inputs.end(), l.storage) != inputs.end();
    // the references: the items' and `lives`' own
    if (!is_input && l.written_first && !l.storage->is_host() && l.storage.use_count() == l.refs + 1)
      internal.push_back(&l);
  }
  for (const Life* l : internal) unplanned_bytes_ += l->storage->bytes();

  // Greedy in order of first use: take the smallest free storage of the same device that is large
  // enough; a storage is free after its last use.
  std::vector<std::shared_ptr<Storage>> replacement(internal.size());
  std::vector<std::pair<size_t, Life*>> busy;  // (last use, owner) of the storages in use
  std::vector<Life*> free_list;
  for (size_t n = 0; n < internal.size(); ++n) {
    Life* l = internal[n];
    for (auto it = busy.begin(); it != busy.end();) {
      if (it->first < l->first) {
        free_list.push_back(it->second);
        it = busy.erase(it);
      } else {
        ++it;
      }
    }
    Life* best = nullptr;
    for (Life* f : free_list)
      if (f->storage->device() == l->storage->device() && f->storage->bytes() >= l->storage->bytes() &&
          (!best || f->storage->bytes() < best->storage->bytes()))
        best = f;
    if (best) {
      free_list.erase(std::find(free_list.begin(), free_list.end(), best));
      replacement[n] = best->storage;
      best->last = std::max(best->last, l->last);  // the lender is busy until the borrower is done
      busy.push_back({best->last, best});
    } else {
      planned_bytes_ += l->storage->bytes();
      busy.push_back({l->last, l});
    }
  }
  for (size_t n = 0; n < internal.size(); ++n) {
    if (!replacement[n]) continue;
    const Storage* old = internal[n]->storage.get();
    for (PreparedItem& it : items_)
      for (size_t j = 0; j < it.storages.size(); ++j)
        if (it.storages[j].get() == old) point_at(it, j, replacement[n]);
  }
}

void Plan::replay(std::span<const std::shared_ptr<Storage>> inputs, std::span<const int64_t> values) {
  trace::Span span("jit", [&] { return cat("jit replay (", items_.size(), " items)"); });
  struct Unbind {  // the plan keeps no input alive, also when a launch throws
    Plan& plan;
    ~Unbind() { plan.unbind_inputs(); }
  } unbind{*this};
  for (size_t k = 0; k < inputs.size(); ++k) {
    binding_[k] = inputs[k];
    if (!std::binary_search(held_.begin(), held_.end(), inputs[k].get())) continue;
    // a buffer the plan writes or reads on its own (the previous call's output passed back, a
    // weight): the kernels get a copy of it, so none reads a buffer that it or an earlier item writes
    std::shared_ptr<Storage>& copy = scratch_[k];
    if (!copy || copy->bytes() != inputs[k]->bytes() || copy->device() != inputs[k]->device())
      copy = std::make_shared<Storage>(inputs[k]->device(), inputs[k]->bytes());
    copy->ensure_allocated();
    copy_between_devices(*copy, *inputs[k], inputs[k]->bytes());
    binding_[k] = copy;
  }
  for (const Slot& s : slots_) point_at(items_[s.item], s.position, binding_[s.input]);
  if (!var_uses_.empty()) {
    for (const VarUse& u : var_uses_) vals_[u.set][u.entry].second = values[u.var];
    for (uint32_t i : var_items_) bind_values(items_[i], vals_[item_vals_[i]]);
  }
  if (lanes_.lanes > 1) {  // several devices: each on its own thread
    run_lanes(items_, lanes_);
    return;
  }
  if (batched_ && !batches_.empty() && debug_level() < 2 && !Profile::active() && !trace::on()) {
    run_batched();
    return;
  }
  for (const PreparedItem& it : items_) it.run();
}

}  // namespace kiln::runtime
