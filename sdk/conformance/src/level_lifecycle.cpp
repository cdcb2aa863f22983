// sdk/conformance/src/level_lifecycle.cpp - level 5: devices opened and closed with work in
// between, concurrent use of thread-safe devices, and leaks (under AddressSanitizer).
#include <atomic>
#include <cstring>
#include <mutex>
#include <thread>

#include "kit.hpp"

// LeakSanitizer's entry point, present only in sanitized processes.
extern "C" int __lsan_do_recoverable_leak_check() __attribute__((weak));

namespace kiln::conformance {

namespace {

// Each cycle opens a device of its own, allocates, copies both ways, frees and closes.
void cycles(Kit& k) {
  k.require_usable();
  for (int i = 0; i < 20; ++i) {
    kiln_device* dev = nullptr;
    const kiln_device_api* api = nullptr;
    backend::throw_if_error(k.api->device_open(0, &dev, &api), "device_open");
    std::string problem;
    kiln_buffer* b = nullptr;
    if (kiln_error* e = api->allocator->alloc(dev, 4096, nullptr, &b)) {
      std::string msg = backend::take_error_message(e);
      api->close(dev);
      if (i == 0 && msg.find("offline") != std::string::npos) throw Skip{"the device cannot allocate: " + msg};
      throw TestFailure("alloc in cycle " + std::to_string(i) + ": " + msg);
    }
    std::vector<unsigned char> data(4096, static_cast<unsigned char>(i)), back(4096);
    kiln_error* e = api->allocator->copy_in(dev, b, 0, data.data(), data.size());
    if (!e) e = api->allocator->copy_out(dev, back.data(), b, 0, back.size());
    if (e) problem = backend::take_error_message(e);
    else if (back != data) problem = "copy round trip differs in cycle " + std::to_string(i);
    api->allocator->free(dev, b);
    api->close(dev);
    require(problem.empty(), problem);
  }
}

// Two threads allocating and copying at once on a device that says it is thread-safe.
void threads(Kit& k) {
  backend::Device& d = k.device();
  if (!d.threadsafe()) throw Skip{"the device is not KILN_DEVICE_THREADSAFE (the host serialises its calls)"};
  k.memory_device();
  std::atomic<int> failures{0};
  std::string first;
  std::mutex mu;
  auto work = [&](int seed) {
    try {
      for (int i = 0; i < 100; ++i) {
        std::vector<unsigned char> data(1000, static_cast<unsigned char>(seed + i)), back(1000);
        kiln_buffer* b = d.alloc(1000);
        d.copy_in(b, 0, data.data(), 1000);
        d.copy_out(back.data(), b, 0, 1000);
        d.free(b);
        if (back != data) throw TestFailure("concurrent copies mixed up buffers");
      }
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(mu);
      if (failures++ == 0) first = e.what();
    }
  };
  std::thread a(work, 1), b(work, 101);
  a.join();
  b.join();
  require(failures == 0, first);
}

void leaks(Kit&) {
  if (!__lsan_do_recoverable_leak_check)
    throw Skip{"not running under AddressSanitizer (build kiln with -DKILN_SANITIZE=address to check for leaks)"};
  require(__lsan_do_recoverable_leak_check() == 0, "LeakSanitizer found leaks (see the report on stderr)");
}

}  // namespace

void add_lifecycle_tests(std::vector<TestCase>& t) {
  t.push_back({5, "L5.cycles", cycles});
  t.push_back({5, "L5.threads", threads});
  t.push_back({5, "L5.leaks", leaks});
}

}  // namespace kiln::conformance
