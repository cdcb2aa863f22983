// runtime/lanes.cpp - one thread per device lane, items waiting on their dependencies only.
#include "runtime/lanes.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "runtime/buffer.hpp"
#include "runtime/profile_stack.hpp"

namespace kiln::runtime {

namespace {

const void* lane_key(const PreparedItem& it) {
  const PreparedKernel& p = *it.kernel;
  if (p.device) return p.device.get();
  if (p.src_device) return p.src_device.get();
  return nullptr;  // host work
}

// Parked threads that run one lane each. A worker sleeps on its slot's state between runs; they
// are created on first need and live for the process (never joined: runs may happen at exit).
class Workers {
 public:
  // Runs jobs[i] on worker i and `mine` on the caller; returns once all have finished.
  void run(std::vector<std::function<void()>>& jobs, const std::function<void()>& mine) {
    std::lock_guard<std::mutex> lock(mu_);  // one run of several lanes at a time (realizes are serialised anyway)
    while (slots_.size() < jobs.size()) {
      slots_.push_back(std::make_unique<Slot>());
      std::thread(&Workers::loop, slots_.back().get()).detach();
    }
    for (size_t i = 0; i < jobs.size(); ++i) {
      slots_[i]->job = &jobs[i];
      slots_[i]->state.store(1, std::memory_order_release);
      slots_[i]->state.notify_one();
    }
    mine();
    for (size_t i = 0; i < jobs.size(); ++i) {
      Slot& s = *slots_[i];
      for (int v; (v = s.state.load(std::memory_order_acquire)) != 2;) s.state.wait(v);
      s.state.store(0, std::memory_order_relaxed);
    }
  }

 private:
  struct Slot {
    std::atomic<int> state{0};  // 0 idle, 1 job posted, 2 done
    std::function<void()>* job = nullptr;
  };
  static void loop(Slot* s) {
    while (true) {
      for (int v; (v = s->state.load(std::memory_order_acquire)) != 1;) s->state.wait(v);
      (*s->job)();  // the job catches its own errors
      s->state.store(2, std::memory_order_release);
      s->state.notify_one();
    }
  }
  std::mutex mu_;
  std::vector<std::unique_ptr<Slot>> slots_;
};

Workers& workers() {
  static Workers* w = new Workers;
  return *w;
}

}  // namespace

std::vector<std::vector<uint32_t>> item_dependencies(const std::vector<PreparedItem>& items) {
  // per buffer: its last writer, and the items that read it since (RAW: wait for the writer; WAR
  // and WAW: a writer waits for the readers since the last write, or that writer)
  struct Uses {
    int64_t writer = -1;
    std::vector<uint32_t> readers;
  };
  std::unordered_map<const Storage*, Uses> uses;
  std::vector<std::vector<uint32_t>> deps(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    auto& d = deps[i];
    auto need = [&](int64_t j) {
      if (j >= 0 && std::find(d.begin(), d.end(), static_cast<uint32_t>(j)) == d.end()) d.push_back(static_cast<uint32_t>(j));
    };
    const uint64_t written = items[i].kernel->written;
    for (size_t b = 0; b < items[i].storages.size(); ++b) {
      Uses& u = uses[items[i].storages[b].get()];
      need(u.writer);
      if (b < 64 && (written >> b & 1)) {
        for (uint32_t r : u.readers) need(r);
        u.writer = static_cast<int64_t>(i);
        u.readers.clear();
      } else {
        u.readers.push_back(static_cast<uint32_t>(i));
      }
    }
  }
  return deps;
}

LanePlan plan_lanes(const std::vector<PreparedItem>& items) {
  LanePlan plan;
  std::vector<const void*> keys;
  plan.lane.resize(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    const void* k = lane_key(items[i]);
    size_t l = std::find(keys.begin(), keys.end(), k) - keys.begin();
    if (l == keys.size()) keys.push_back(k);
    plan.lane[i] = static_cast<uint32_t>(l);
  }
  plan.lanes = static_cast<uint32_t>(std::max<size_t>(1, keys.size()));
  if (plan.lanes == 1) return plan;
  plan.waits.resize(items.size());
  const std::vector<std::vector<uint32_t>> deps = item_dependencies(items);
  for (size_t i = 0; i < items.size(); ++i)
    for (uint32_t j : deps[i])
      if (plan.lane[j] != plan.lane[i]) plan.waits[i].push_back(j);
  return plan;
}

void run_lanes(const std::vector<PreparedItem>& items, const LanePlan& plan) {
  if (plan.lanes <= 1) {
    for (const PreparedItem& it : items) it.run();
    return;
  }
  size_t n = items.size();
  std::unique_ptr<std::atomic<uint8_t>[]> done(new std::atomic<uint8_t>[n]);  // 0 pending, 1 ran, 2 skipped
  for (size_t i = 0; i < n; ++i) done[i].store(0, std::memory_order_relaxed);
  std::mutex err_mu;
  std::exception_ptr error;
  auto lane = [&](uint32_t l) {
    bool stopped = false;
    for (size_t i = 0; i < n; ++i) {
      if (plan.lane[i] != l) continue;
      for (uint32_t j : plan.waits[i]) {
        for (uint8_t v; (v = done[j].load(std::memory_order_acquire)) == 0;) done[j].wait(v);
        stopped |= done[j].load(std::memory_order_relaxed) == 2;
      }
      if (!stopped) {
        try {
          items[i].run();
        } catch (...) {
          std::lock_guard<std::mutex> lock(err_mu);
          if (!error) error = std::current_exception();
          stopped = true;
        }
      }
      done[i].store(stopped ? 2 : 1, std::memory_order_release);
      done[i].notify_all();
    }
  };
  std::vector<std::function<void()>> jobs;
  Profile* profiles = profile_stack();  // the caller's Profiles see every lane's launches
  for (uint32_t l = 1; l < plan.lanes; ++l)
    jobs.push_back([&lane, l, profiles] {
      AdoptProfiles adopt(profiles);
      lane(l);
    });
  workers().run(jobs, [&lane] { lane(0); });
  if (error) std::rethrow_exception(error);
}

void run_items(const std::vector<PreparedItem>& items) { run_lanes(items, plan_lanes(items)); }

}  // namespace kiln::runtime
