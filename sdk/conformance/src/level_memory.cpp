// sdk/conformance/src/level_memory.cpp - level 2: the allocator and copies.
#include <algorithm>
#include <random>

#include <optional>

#include "kit.hpp"

namespace kiln::conformance {

namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

// A buffer freed at scope exit.
struct Buf {
  backend::Device& dev;
  kiln_buffer* b;
  Buf(backend::Device& d, uint64_t bytes, uint32_t flags = 0) : dev(d), b(d.alloc(bytes, flags)) {}
  ~Buf() { dev.free(b); }
  Buf(const Buf&) = delete;
  Buf& operator=(const Buf&) = delete;
};

std::vector<unsigned char> random_bytes(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<unsigned char> v(n);
  for (auto& x : v) x = static_cast<unsigned char>(rng());
  return v;
}

void sizes(Kit& k) {
  backend::Device& d = k.memory_device();
  std::vector<uint64_t> sizes{0, 1, 7, 4097, 65536 + 3};
  uint64_t total = d.props().memory_total;
  if (total == 0 || total >= 2048 * kMiB) sizes.push_back(256 * kMiB);
  std::vector<kiln_buffer*> bufs;
  for (uint64_t s : sizes) bufs.push_back(d.alloc(s));
  for (size_t i = 0; i < bufs.size(); ++i)
    for (size_t j = 0; j < i; ++j) require(bufs[i] != bufs[j], "two live allocations returned the same handle");
  // free in an order unrelated to allocation
  std::mt19937 rng(3);
  std::shuffle(bufs.begin(), bufs.end(), rng);
  for (kiln_buffer* b : bufs) d.free(b);
}

void round_trip(Kit& k) {
  backend::Device& d = k.memory_device();
  const size_t n = 4097;
  Buf buf(d, n);
  std::vector<unsigned char> data = random_bytes(n, 1), back(n);
  d.copy_in(buf.b, 0, data.data(), n);
  d.copy_out(back.data(), buf.b, 0, n);
  require(back == data, "copy_in then copy_out of 4097 bytes changed them");
  for (auto [offset, len] : std::vector<std::pair<size_t, size_t>>{{1, 13}, {13, 1000}, {4000, 97}, {4096, 1}}) {
    std::vector<unsigned char> part = random_bytes(len, static_cast<unsigned>(offset)), got(len);
    d.copy_in(buf.b, offset, part.data(), len);
    std::copy(part.begin(), part.end(), data.begin() + static_cast<long>(offset));
    d.copy_out(got.data(), buf.b, offset, len);
    require(got == part, "round trip at offset " + std::to_string(offset) + " (" + std::to_string(len) + " bytes) differs");
  }
  d.copy_out(back.data(), buf.b, 0, n);
  require(back == data, "copies at odd offsets changed bytes outside their ranges");
}

void zeroed(Kit& k) {
  backend::Device& d = k.memory_device();
  for (uint64_t n : {uint64_t{1}, uint64_t{1000}, 3 * kMiB + 5}) {
    Buf buf(d, n, KILN_ALLOC_ZERO);
    std::vector<unsigned char> back(n, 0xa5);
    d.copy_out(back.data(), buf.b, 0, n);
    require(std::all_of(back.begin(), back.end(), [](unsigned char c) { return c == 0; }),
            "KILN_ALLOC_ZERO memory of " + std::to_string(n) + " bytes is not zero");
  }
}

void out_of_range(Kit& k) {
  backend::Device& d = k.memory_device();
  Buf buf(d, 64);
  std::vector<unsigned char> host(128);
  for (auto [offset, n] : std::vector<std::pair<uint64_t, uint64_t>>{{0, 65}, {60, 5}, {uint64_t{1} << 62, 8}}) {
    bool in_threw = false, out_threw = false;
    try {
      d.copy_in(buf.b, offset, host.data(), n);
    } catch (const Error& e) {
      in_threw = std::string(e.what()).size() > 0;
    }
    try {
      d.copy_out(host.data(), buf.b, offset, n);
    } catch (const Error& e) {
      out_threw = std::string(e.what()).size() > 0;
    }
    require(in_threw && out_threw, "a copy of " + std::to_string(n) + " bytes at offset " + std::to_string(offset) +
                                       " into a 64-byte buffer was accepted");
  }
}

void out_of_memory(Kit& k) {
  backend::Device& d = k.memory_device();
  try {
    d.free(d.alloc(uint64_t{1} << 62));
  } catch (const Error& e) {
    require(e.code() == ErrorCode::resource_exhausted,
            std::string("allocating 4 EiB failed with the wrong code (want RESOURCE_EXHAUSTED): ") + e.what());
    return;
  }
  throw TestFailure("allocating 4 EiB succeeded");
}

void device_copy(Kit& k) {
  backend::Device& d = k.memory_device();
  if (!d.has_device_copy()) throw Skip{"the allocator has no device-to-device copy slot"};
  const size_t n = 5000;
  Buf a(d, n), b(d, n);
  std::vector<unsigned char> data = random_bytes(n, 9), back(n, 0);
  d.copy_in(a.b, 0, data.data(), n);
  d.copy_in(b.b, 0, back.data(), n);
  d.copy(b.b, 3, a.b, 1, n - 10);
  d.copy_out(back.data(), b.b, 0, n);
  for (size_t i = 0; i < n - 10; ++i)
    require(back[i + 3] == data[i + 1], "device copy: byte " + std::to_string(i + 3) + " differs");
  require(back[0] == 0 && back[n - 1] == 0, "device copy wrote outside its range");
}

// copy_peer (optional): bytes from a buffer of device 1 land in a buffer of device 0, in range.
void peer_copy(Kit& k) {
  backend::Device& d = k.memory_device();
  if (!d.has_peer_copy()) throw Skip{"the allocator has no copy_peer slot (optional)"};
  std::optional<backend::Device> other;
  try {
    other = backend::Device::open(k.backend + ":1");
  } catch (const Error&) {
    throw Skip{"the plugin shows one device here; copy_peer needs two (the cpu backend: option devices = 2)"};
  }
  const size_t n = 5000;
  Buf a(*other, n), b(d, n);
  std::vector<unsigned char> data = random_bytes(n, 10), back(n, 0);
  other->copy_in(a.b, 0, data.data(), n);
  d.copy_in(b.b, 0, back.data(), n);
  d.copy_from_peer(b.b, 3, *other, a.b, 1, n - 10);
  d.copy_out(back.data(), b.b, 0, n);
  for (size_t i = 0; i < n - 10; ++i)
    require(back[i + 3] == data[i + 1], "copy_peer: byte " + std::to_string(i + 3) + " differs");
  require(back[0] == 0 && back[n - 1] == 0, "copy_peer wrote outside its range");
}

// host_address / wrap_host (optional, both or neither): a buffer's bytes are at its address, and
// host memory wrapped as a buffer is read and written in place, and still the caller's after free.
void host_memory(Kit& k) {
  backend::Device& d = k.memory_device();
  if (!d.has_host_memory()) throw Skip{"the allocator has no host_address/wrap_host slots (optional: devices with memory of their own)"};
  const size_t n = 4099;
  Buf a(d, n);
  std::vector<unsigned char> data = random_bytes(n, 11), back(n);
  d.copy_in(a.b, 0, data.data(), n);
  auto* p = static_cast<unsigned char*>(d.host_address(a.b));
  require(p != nullptr, "host_address returned NULL for a live buffer");
  require(std::equal(data.begin(), data.end(), p), "host_address: the buffer's bytes are not at its address");
  p[5] ^= 0xff;  // the host writes through the address; the device sees it
  d.copy_out(back.data(), a.b, 0, n);
  require(back[5] == static_cast<unsigned char>(data[5] ^ 0xff), "a write through host_address is not in the buffer");
  // 64-byte aligned memory of the host's, wrapped
  std::vector<unsigned char> raw(n + 64);
  unsigned char* mem = raw.data() + (64 - reinterpret_cast<uintptr_t>(raw.data()) % 64) % 64;
  std::copy(data.begin(), data.begin() + n, mem);
  kiln_buffer* w = d.wrap_host(mem, n);
  require(w != nullptr, "wrap_host refused 64-byte aligned host memory");
  d.copy_out(back.data(), w, 0, n);
  bool same = std::equal(data.begin(), data.end(), back.begin());
  std::vector<unsigned char> part = random_bytes(100, 12);
  d.copy_in(w, 7, part.data(), part.size());
  bool in_place = std::equal(part.begin(), part.end(), mem + 7);
  d.free(w);  // must not free the host's memory (ASan would see a bad free)
  require(same, "copy_out of a wrapped buffer differs from the memory it wraps");
  require(in_place, "copy_in into a wrapped buffer did not write the host's memory");
  mem[0] = 1;  // still ours
  // an address the kernels may not accept: refused (null) or wrapped, never a crash
  if (kiln_buffer* odd = d.wrap_host(mem + 1, 64)) d.free(odd);
}

}  // namespace

void add_memory_tests(std::vector<TestCase>& t) {
  t.push_back({2, "L2.sizes", sizes});
  t.push_back({2, "L2.round_trip", round_trip});
  t.push_back({2, "L2.zeroed", zeroed});
  t.push_back({2, "L2.out_of_range", out_of_range});
  t.push_back({2, "L2.out_of_memory", out_of_memory});
  t.push_back({2, "L2.device_copy", device_copy});
  t.push_back({2, "L2.peer_copy", peer_copy});
  t.push_back({2, "L2.host_memory", host_memory});
}

}  // namespace kiln::conformance
