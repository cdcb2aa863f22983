// ir/uop.cpp - interning (hash-consing), lifetime, fingerprints and the node factory.
//
// The intern table is split into shards by hash, each an open-addressing table of node pointers
// (linear probing, backward-shift deletion, no tombstones) behind its own spin lock. Entries are weak:
// a node whose count reached zero is being destroyed; lookups that find it treat it as a miss and
// the dying node removes exactly its own pointer.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>

#include "ir/uop_access.hpp"
#include "kiln/uop.hpp"
#include "support/check.hpp"
#include "support/hash.hpp"
#include "support/spin_lock.hpp"

namespace kiln {

static_assert(kNumOps <= 128, "OpMask holds 128 ops");
// Group sanity: a group naming an unknown op does not compile, the kinds partition the ops, and
// derived groups are unions of kinds (ops.def); these catch wrong memberships of the properties.
static_assert((groups::KernelLevel & groups::TensorLevel).empty() && (groups::KernelLevel | groups::TensorLevel |
              groups::ProgramLevel) == groups::All, "every op is kernel-, tensor- or program-level, once");
static_assert(groups::Commutative.subset_of(groups::Binary), "commutative ops are binary");
static_assert(groups::Associative.subset_of(groups::Binary) && groups::Idempotent.subset_of(groups::Binary));
static_assert(groups::Comparison.subset_of(groups::Binary));
static_assert(groups::Elementwise == (groups::ALU | OpMask{Ops::CAST, Ops::BITCAST}));
static_assert((groups::Unary & groups::Binary).empty() && (groups::Binary & groups::Ternary).empty());
static_assert(groups::Movement.size() == 6 && !groups::Unary.empty() && !groups::BufferLike.empty());

const char* op_name(Ops op) {
  static const char* names[] = {
#define KILN_OP(name, kind, lir, doc) #name,
#include "kiln/ops.def"
  };
  return static_cast<int>(op) < kNumOps ? names[static_cast<int>(op)] : "?";
}

const char* axis_type_name(AxisType t) {
  switch (t) {
    case AxisType::LOOP: return "LOOP";
    case AxisType::GLOBAL: return "GLOBAL";
    case AxisType::LOCAL: return "LOCAL";
    case AxisType::REDUCE: return "REDUCE";
    case AxisType::UPCAST: return "UPCAST";
    case AxisType::UNROLL: return "UNROLL";
    case AxisType::GROUP_REDUCE: return "GROUP_REDUCE";
    case AxisType::THREAD: return "THREAD";
    case AxisType::BLOCK: return "BLOCK";
  }
  return "?";
}

Float::Float(double x) : v(std::isnan(x) ? std::numeric_limits<double>::quiet_NaN() : x) {}
uint64_t Float::bits() const {
  uint64_t b;
  std::memcpy(&b, &v, 8);
  return b;
}

// The switches over an Arg's alternative below name each one (6: NamedInts, the last): a new
// alternative must be hashed, fingerprinted and printed, not taken for a NamedInts.
static_assert(std::variant_size_v<Arg> == 7, "a new Arg alternative: add its case to arg_hash, fingerprint_arg and arg_str");

uint64_t arg_hash(const Arg& a) {
  uint64_t h = mix64(a.index() + 1);
  switch (a.index()) {
    case 0: return h;
    case 1: return hash_combine(h, static_cast<uint64_t>(std::get<int64_t>(a)));
    case 2: return hash_combine(h, std::get<Float>(a).bits());
    case 3: return hash_combine(h, std::get<bool>(a));
    case 4: {
      const auto& s = std::get<std::string>(a);
      return hash_combine(h, hash_bytes(s.data(), s.size()));
    }
    case 5: {
      const auto& v = std::get<std::vector<int64_t>>(a);
      return hash_combine(h, hash_bytes(v.data(), v.size() * 8));
    }
    case 6: {
      const auto& n = std::get<NamedInts>(a);
      return hash_combine(hash_combine(h, hash_bytes(n.name.data(), n.name.size())),
                          hash_bytes(n.ints.data(), n.ints.size() * 8));
    }
  }
  KILN_UNREACHABLE("arg_hash: Arg alternative ", a.index());
}

static void fingerprint_arg(Fingerprint& f, const Arg& a) {
  f.u64(a.index());
  switch (a.index()) {
    case 0: break;
    case 1: f.i64(std::get<int64_t>(a)); break;
    case 2: f.u64(std::get<Float>(a).bits()); break;
    case 3: f.u64(std::get<bool>(a)); break;
    case 4: f.str(std::get<std::string>(a)); break;
    case 5: {
      const auto& v = std::get<std::vector<int64_t>>(a);
      f.u64(v.size());
      for (int64_t x : v) f.i64(x);
      break;
    }
    case 6: {
      const auto& n = std::get<NamedInts>(a);
      f.str(n.name).u64(n.ints.size());
      for (int64_t x : n.ints) f.i64(x);
      break;
    }
    default: KILN_UNREACHABLE("fingerprint_arg: Arg alternative ", a.index());
  }
}

namespace {

constexpr int kShardBits = 6;
constexpr int kShards = 1 << kShardBits;

// A slot is one word: the node address (16-byte aligned, below 2^47, stored >> 4) in the low 43
// bits and 21 bits of the hash above it. The hash bits give the home slot and filter probes, so
// probing and deletion never touch the nodes, and the table is half the size of (hash, pointer)
// pairs, which keeps it cache-resident for longer. A shard holds at most 2^21 slots.
constexpr int kPtrBits = 43;
constexpr uint64_t kPtrMask = (uint64_t{1} << kPtrBits) - 1;
constexpr int kTagBits = 64 - kPtrBits;
constexpr uint64_t kTagMask = (uint64_t{1} << kTagBits) - 1;

inline uint64_t tag_of(uint64_t h) { return (h >> kShardBits) & kTagMask; }
inline uint64_t pack(uint64_t h, const UOpNode* n) { return tag_of(h) << kPtrBits | reinterpret_cast<uintptr_t>(n) >> 4; }
inline UOpNode* unpack(uint64_t slot) { return reinterpret_cast<UOpNode*>((slot & kPtrMask) << 4); }
inline uint64_t slot_tag(uint64_t slot) { return slot >> kPtrBits; }

struct Shard {
  SpinLock mu;
  uint64_t* slots = nullptr;
  size_t mask = 0;  // capacity - 1 (capacity is a power of two), 0 when empty
  size_t count = 0;

  size_t home(uint64_t tag) const { return tag & mask; }

  void grow() {
    size_t cap = mask ? (mask + 1) * 2 : 64;
    if (cap > (size_t{1} << kTagBits)) fail(ErrorCode::resource_exhausted, "UOp intern table is full (", cap / 2 * kShards, " slots)");
    auto* fresh = static_cast<uint64_t*>(std::calloc(cap, sizeof(uint64_t)));
    if (!fresh) throw std::bad_alloc();
    size_t old_cap = mask ? mask + 1 : 0;
    uint64_t* old = slots;
    slots = fresh;
    mask = cap - 1;
    for (size_t i = 0; i < old_cap; ++i)
      if (old[i]) {
        size_t j = home(slot_tag(old[i]));
        while (slots[j]) j = (j + 1) & mask;
        slots[j] = old[i];
      }
    std::free(old);
  }

  void erase(UOpNode* n) {
    size_t i = home(tag_of(n->hash));
    while (unpack(slots[i]) != n) i = (i + 1) & mask;
    // backward-shift deletion keeps every probe chain unbroken
    size_t j = i;
    for (;;) {
      j = (j + 1) & mask;
      if (!slots[j]) break;
      size_t h = home(slot_tag(slots[j]));
      bool movable = (i <= j) ? (h <= i || h > j) : (h <= i && h > j);
      if (movable) {
        slots[i] = slots[j];
        i = j;
      }
    }
    slots[i] = 0;
    --count;
  }
};

Shard g_shards[kShards];
std::atomic<uint64_t> g_next_id{1};

bool try_retain(UOpNode* n) {
  uint32_t c = n->refs.load(std::memory_order_relaxed);
  while (c != 0)
    if (n->refs.compare_exchange_weak(c, c + 1, std::memory_order_acq_rel, std::memory_order_relaxed)) return true;
  return false;
}

bool same(const UOpNode* n, Ops op, DType dtype, std::span<const UOp> src, const Arg& arg, int32_t tag) {
  if (n->op != op || n->nsrc != src.size() || n->tag != tag || !(n->dtype == dtype)) return false;
  const UOp* s = n->srcs();
  for (size_t i = 0; i < src.size(); ++i)
    if (s[i].node() != src[i].node()) return false;
  return n->arg == arg;
}

std::atomic<DestroyHook> g_hooks[kNumOps];

void destroy(UOpNode* n) {
  Shard& sh = g_shards[n->hash & (kShards - 1)];
  {
    std::lock_guard<SpinLock> lock(sh.mu);
    sh.erase(n);
  }
  if (DestroyHook hook = g_hooks[static_cast<int>(n->op)].load(std::memory_order_acquire)) hook(n);
  UOp* s = n->srcs();
  for (uint32_t i = 0; i < n->nsrc; ++i) s[i].~UOp();
  n->~UOpNode();
  std::free(n);
}

thread_local std::vector<UOpNode*>* tl_pending = nullptr;

}  // namespace

void UOp::release(UOpNode* n) {
  if (n->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  // Children released by a dying node are queued, not destroyed recursively: a million-deep chain
  // must not overflow the stack.
  if (tl_pending) {
    tl_pending->push_back(n);
    return;
  }
  std::vector<UOpNode*> pending;
  tl_pending = &pending;
  destroy(n);
  while (!pending.empty()) {
    UOpNode* d = pending.back();
    pending.pop_back();
    destroy(d);
  }
  tl_pending = nullptr;
}

UOp UOp::make(Ops op, DType dtype, std::span<const UOp> src, Arg arg, int32_t tag) {
  KILN_CHECK(src.size() <= 0xffffffffu, "too many sources for ", op_name(op));
  uint64_t h = hash_combine(mix64(static_cast<uint64_t>(op) << 32 | static_cast<uint32_t>(tag)), dtype.bits());
  h = hash_combine(h, arg_hash(arg));
  OpMask mask;
  for (const UOp& s : src) {
    KILN_CHECK(s.n_, "null source passed to UOp::make(", op_name(op), ")");
    h = hash_combine(h, s.n_->id);
    mask.add(s.n_->op);
  }
  Shard& sh = g_shards[h & (kShards - 1)];
  std::lock_guard<SpinLock> lock(sh.mu);
  const uint64_t htag = tag_of(h);
  size_t free_slot = SIZE_MAX;
  if (sh.mask) {
    for (size_t i = sh.home(htag);; i = (i + 1) & sh.mask) {
      uint64_t sl = sh.slots[i];
      if (!sl) {
        free_slot = i;
        break;
      }
      if (slot_tag(sl) != htag) continue;
      UOpNode* n = unpack(sl);
      if (n->hash == h && same(n, op, dtype, src, arg, tag) && try_retain(n)) return UOp(n);
    }
  }
  if ((sh.count + 1) * 2 > (sh.mask + 1) || !sh.mask) {  // load factor <= 1/2
    sh.grow();
    free_slot = sh.home(htag);
    while (sh.slots[free_slot]) free_slot = (free_slot + 1) & sh.mask;
  }
  void* mem = std::malloc(sizeof(UOpNode) + src.size() * sizeof(UOp));
  if (!mem) throw std::bad_alloc();
  auto* n = new (mem) UOpNode{};
  n->refs.store(1, std::memory_order_relaxed);
  n->op = op;
  n->nsrc = static_cast<uint32_t>(src.size());
  n->tag = tag;
  n->dtype = dtype;
  n->hash = h;
  n->id = g_next_id.fetch_add(1, std::memory_order_relaxed);
  n->src_ops = mask;
  n->arg = std::move(arg);
  UOp* s = n->srcs();
  for (size_t i = 0; i < src.size(); ++i) new (&s[i]) UOp(src[i]);
  KILN_CHECK((reinterpret_cast<uintptr_t>(n) & 15) == 0 && reinterpret_cast<uintptr_t>(n) >> (kPtrBits + 4) == 0,
             "node address does not fit the intern table's packed slots");
  sh.slots[free_slot] = pack(h, n);
  ++sh.count;
  return UOp(n);
}

void set_destroy_hook(Ops op, DestroyHook hook) { g_hooks[static_cast<int>(op)].store(hook, std::memory_order_release); }

size_t intern_table_size() {
  size_t total = 0;
  for (Shard& sh : g_shards) {
    std::lock_guard<SpinLock> lock(sh.mu);
    total += sh.count;
  }
  return total;
}

std::mutex& cache_fill_lock(const UOpNode* n) {
  static std::mutex* locks = new std::mutex[64];  // never destroyed: nodes die during static destruction
  return locks[(reinterpret_cast<uintptr_t>(n) >> 6) % 64];
}

UOp UOpAccess::from_node(const UOpNode* n) {
  UOp u(const_cast<UOpNode*>(n));
  u.retain();
  return u;
}

// The stable fingerprint over (op name, dtype, tag, arg, the sources' keys): it keys the on-disk
// caches, so the byte stream it hashes must not change without bumping their versions.
Key128 UOp::key() const {
  fill_cache(n_, kKeyCached, [](const UOpNode* n) {
    Fingerprint f;
    f.str(op_name(n->op)).u64(n->dtype.bits()).i64(n->tag);
    fingerprint_arg(f, n->arg);
    f.u64(n->nsrc);
    for (uint32_t i = 0; i < n->nsrc; ++i) f.u64(n->srcs()[i].node()->key_hi).u64(n->srcs()[i].node()->key_lo);
    Key128 k = f.finish();
    n->key_hi = k.hi;
    n->key_lo = k.lo;
  });
  return {n_->key_hi, n_->key_lo};
}

Key128 process_key(Ops op, DType dtype, int32_t tag, const Arg& arg, std::span<const Key128> src_keys) {
  // two chains with different seeds, each over every word (a source's hi and lo in both, in
  // opposite order), so the halves are not one 64-bit hash twice
  const uint64_t self = hash_combine(hash_combine(hash_combine(mix64(static_cast<uint64_t>(op) + 1), dtype.bits()),
                                                  static_cast<uint32_t>(tag)),
                                     arg_hash(arg));
  uint64_t hi = hash_combine(self, src_keys.size()), lo = hash_combine(mix64(self ^ 0x6a09e667f3bcc909ULL), src_keys.size());
  for (const Key128& k : src_keys) {
    hi = hash_combine(hash_combine(hi, k.hi), k.lo);
    lo = hash_combine(hash_combine(lo, k.lo), k.hi);
  }
  return {hi, lo};
}

// ---- typed arg access ----
template <typename T>
static const T& arg_as(const UOp& u, const char* what) {
  const T* p = std::get_if<T>(&u.arg());
  if (!p) check_failed(__FILE__, __LINE__, "arg type", cat(op_name(u.op()), " arg is not ", what, ": ", arg_str(u.arg())));
  return *p;
}
int64_t UOp::arg_int() const { return arg_as<int64_t>(*this, "an int"); }
double UOp::arg_float() const { return arg_as<Float>(*this, "a float").v; }
bool UOp::arg_bool() const { return arg_as<bool>(*this, "a bool"); }
const std::string& UOp::arg_string() const { return arg_as<std::string>(*this, "a string"); }
const std::vector<int64_t>& UOp::arg_ints() const { return arg_as<std::vector<int64_t>>(*this, "an int list"); }

}  // namespace kiln
