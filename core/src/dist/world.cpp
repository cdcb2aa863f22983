// dist/world.cpp - init/finalize, the header exchange with its liveness checks, MPI error checks,
// and the watchdog thread over blocking transfers.
#include "dist/world.hpp"

#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "tensor/realize_groups.hpp"
#include "support/env.hpp"

namespace kiln::dist {
namespace detail {
namespace {

constexpr uint64_t kMagic = 0x6b696c6e64697374ULL;  // "kilndist": a stray message is not a header
constexpr int kHostChars = 64;
using Clock = std::chrono::steady_clock;

World& state() {
  static World* w = new World;  // never destroyed: the watchdog and atexit code may still read it
  return *w;
}

double env_timeout() {
  std::string v = getenv_str("KILN_DIST_TIMEOUT");
  if (v.empty()) return 600;
  char* end = nullptr;
  double s = std::strtod(v.c_str(), &end);
  if (end == v.c_str() || *end != '\0' || !(s > 0))
    throw Error(ErrorCode::invalid_argument, "KILN_DIST_TIMEOUT=\"" + v + "\": expected a positive number of seconds (default 600)");
  return s;
}

// This process's host and pid namespace ("vm/pid:[4026531836]"): a peer's pid means something here
// only when both match (ranks in separate containers may share a host name, not their pids).
std::string where_am_i() {
  char host[kHostChars] = {}, ns[64] = {};
  gethostname(host, sizeof host - 1);
  ssize_t n = readlink("/proc/self/ns/pid", ns, sizeof ns - 1);
  return std::string(host) + "/" + (n > 0 ? std::string(ns, static_cast<size_t>(n)) : std::string("?"));
}

// A process on this host is gone: no such pid, or a zombie (killed, not yet reaped by its launcher).
bool seen_dead(int r) {
  World& w = state();
  static const std::string here = where_am_i();
  if (w.places[static_cast<size_t>(r)] != here || here.back() == '?') return false;  // elsewhere: only the timeout tells
  pid_t pid = static_cast<pid_t>(w.pids[static_cast<size_t>(r)]);
  if (kill(pid, 0) != 0 && errno == ESRCH) return true;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  size_t paren = line.rfind(')');  // "pid (comm) S ...": comm may hold spaces
  return paren != std::string::npos && paren + 2 < line.size() && (line[paren + 2] == 'Z' || line[paren + 2] == 'X');
}

// ---- the watchdog: one thread, one armed transfer at a time (collectives are serialized) ----
struct Watchdog {
  std::mutex mu;
  std::condition_variable cv;
  uint64_t armed = 0, next = 1;  // the armed ticket, 0 when none
  std::string op;
  Clock::time_point deadline;
  bool started = false;
};
Watchdog& dog() {
  static Watchdog* d = new Watchdog;  // leaked on purpose: the thread is detached
  return *d;
}

void watch() {
  Watchdog& d = dog();
  std::unique_lock<std::mutex> lock(d.mu);
  for (;;) {
    if (!d.armed) { d.cv.wait(lock); continue; }
    uint64_t ticket = d.armed;
    if (d.cv.wait_until(lock, d.deadline, [&] { return d.armed != ticket; })) continue;
    World& w = state();
    std::fprintf(stderr, "kiln::dist: %s on rank %d of %d did not finish within %g s (KILN_DIST_TIMEOUT, set_timeout): a rank died or "
                 "stopped during the transfer; ending the job (MPI_Abort) rather than hanging\n",
                 d.op.c_str(), w.rank, w.size, w.timeout_s);
    std::fflush(stderr);
    if (w.thread_level >= MPI_THREAD_MULTIPLE) MPI_Abort(MPI_COMM_WORLD, 70);
    std::_Exit(70);
  }
}

}  // namespace

World& world() {
  if (!state().up) dist::init();
  return state();
}

[[noreturn]] void fail(ErrorCode code, const std::string& op, const std::string& message) {
  World& w = state();
  throw Error(code, "kiln::dist: " + op + " on rank " + std::to_string(w.rank) + " of " + std::to_string(w.size) + ": " + message);
}

void check(int rc, const std::string& op) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(rc, text, &len);
  fail(ErrorCode::internal, op, std::string("MPI error ") + std::to_string(rc) + ": " + std::string(text, static_cast<size_t>(len)));
}

std::string rank_name(int r) {
  World& w = state();
  if (r < 0 || static_cast<size_t>(r) >= w.pids.size()) return "rank " + std::to_string(r);
  return "rank " + std::to_string(r) + " (pid " + std::to_string(w.pids[static_cast<size_t>(r)]) + " on host " +
         w.hosts[static_cast<size_t>(r)] + ")";
}

uint64_t shape_hash(const std::vector<int64_t>& shape, uint64_t h) {
  auto mix = [&](uint64_t v) { h = (h ^ v) * 1099511628211ULL; };
  mix(shape.size());
  for (int64_t d : shape) mix(static_cast<uint64_t>(d));
  return h;
}

void refuse_in_jit(const std::string& op) {
  if (!::kiln::detail::jit_capturing()) return;
  fail(ErrorCode::failed_precondition, op,
       "called inside a kiln::Jit, which replays kernels only: the transfer would run once, at the capture, and each replay would reuse "
       "its result. Jit the parts around it instead (forward and backward in one Jit, the optimizer step in another) and call it between "
       "them (docs/dist.md)");
}

Header header(Kind kind, const std::string& what) {
  World& w = world();
  Header h;
  h.magic = kMagic;
  h.seq = ++w.seq;
  h.kind = static_cast<int32_t>(kind);
  std::snprintf(h.what, sizeof h.what, "%s", what.c_str());
  return h;
}

std::vector<Header> agree(Header mine, const void* payload, std::vector<const char*>* payloads) {
  World& w = world();
  std::string op = mine.what;
  if (w.broken) fail(ErrorCode::failed_precondition, op, "the world is broken by an earlier fault (" + w.broken_why + "); end this process");
  if (mine.payload_bytes < 0 || mine.payload_bytes > kEagerBytes)
    fail(ErrorCode::internal, op, "a header's payload of " + std::to_string(mine.payload_bytes) + " bytes is over " + std::to_string(kEagerBytes));
  std::vector<Header> all(static_cast<size_t>(w.size));
  all[static_cast<size_t>(w.rank)] = mine;
  if (payloads) payloads->assign(static_cast<size_t>(w.size), static_cast<const char*>(payload));
  if (w.size == 1) return all;
  // one message per peer: the header, then the payload; received into buffers of the largest size
  // (a rank that sends more or less is caught by the header comparison below)
  const size_t max_msg = sizeof(Header) + static_cast<size_t>(kEagerBytes);
  w.inbox.resize(static_cast<size_t>(w.size));
  w.outbox.resize(sizeof(Header) + static_cast<size_t>(mine.payload_bytes));
  std::memcpy(w.outbox.data(), &mine, sizeof(Header));
  if (mine.payload_bytes) std::memcpy(w.outbox.data() + sizeof(Header), payload, static_cast<size_t>(mine.payload_bytes));
  // recvs[r] / sends[r]: this rank's requests with rank r (MPI_REQUEST_NULL for itself or when done)
  std::vector<MPI_Request> recvs(static_cast<size_t>(w.size), MPI_REQUEST_NULL), sends = recvs;
  for (int r = 0; r < w.size; ++r) {
    if (r == w.rank) continue;
    std::vector<char>& box = w.inbox[static_cast<size_t>(r)];
    box.resize(max_msg);
    check(MPI_Irecv(box.data(), static_cast<int>(max_msg), MPI_BYTE, r, 0, w.headers, &recvs[static_cast<size_t>(r)]), op);
    check(MPI_Isend(w.outbox.data(), static_cast<int>(w.outbox.size()), MPI_BYTE, r, 0, w.headers, &sends[static_cast<size_t>(r)]), op);
  }
  auto start = Clock::now(), last_check = start;
  auto deadline = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(w.timeout_s));
  auto pending = [&](int r) { return recvs[static_cast<size_t>(r)] != MPI_REQUEST_NULL || sends[static_cast<size_t>(r)] != MPI_REQUEST_NULL; };
  auto missing = [&](bool dead_only) {
    std::vector<int> out;
    for (int r = 0; r < w.size; ++r)
      if (pending(r) && (!dead_only || seen_dead(r))) out.push_back(r);
    return out;
  };
  auto give_up = [&](ErrorCode code, const std::vector<int>& who, const std::string& why) {
    std::string names;
    for (int r : who) names += (names.empty() ? "" : ", ") + rank_name(r);
    for (MPI_Request& q : recvs)
      if (q != MPI_REQUEST_NULL) { MPI_Cancel(&q); MPI_Request_free(&q); }
    w.broken = true;
    w.broken_why = names + " " + why;
    fail(code, op, names + " " + why);
  };
  for (;;) {
    bool done = true;
    for (int r = 0; r < w.size; ++r) {
      for (MPI_Request* q : {&recvs[static_cast<size_t>(r)], &sends[static_cast<size_t>(r)]}) {
        if (*q == MPI_REQUEST_NULL) continue;
        int flag = 0;
        check(MPI_Test(q, &flag, MPI_STATUS_IGNORE), op);
        done = done && flag;
      }
    }
    if (done) break;
    // spin for the first few milliseconds (a collective's ranks usually arrive together), then nap
    auto now = Clock::now();
    if (now - start < std::chrono::milliseconds(5)) sched_yield();
    else std::this_thread::sleep_for(std::chrono::microseconds(200));
    if (now - last_check > std::chrono::milliseconds(100)) {
      last_check = now;
      if (std::vector<int> dead = missing(true); !dead.empty())
        give_up(ErrorCode::unavailable, dead, dead.size() == 1 ? "is dead (it exited or was killed before joining)" : "are dead (they exited or were killed before joining)");
    }
    if (now > deadline) {
      std::ostringstream why;
      why << "did not join within " << w.timeout_s << " s (KILN_DIST_TIMEOUT, set_timeout): it threw, exited, is stuck elsewhere, or the ranks call "
          << "collectives in different orders";
      give_up(ErrorCode::deadline_exceeded, missing(false), why.str());
    }
  }
  for (int r = 0; r < w.size; ++r) {
    if (r != w.rank) std::memcpy(&all[static_cast<size_t>(r)], w.inbox[static_cast<size_t>(r)].data(), sizeof(Header));
    if (r != w.rank && payloads) (*payloads)[static_cast<size_t>(r)] = w.inbox[static_cast<size_t>(r)].data() + sizeof(Header);
    const Header& h = all[static_cast<size_t>(r)];
    std::string theirs(h.what, strnlen(h.what, sizeof h.what));
    if (h.magic != kMagic) fail(ErrorCode::internal, op, rank_name(r) + " sent a message that is not a kiln::dist header");
    if (h.kind != mine.kind || h.op != mine.op || h.root != mine.root || h.dtype != mine.dtype || h.numel != mine.numel ||
        h.shape_hash != mine.shape_hash || h.seq != mine.seq || h.payload_bytes != mine.payload_bytes)
      fail(ErrorCode::invalid_argument, op,
           "the ranks disagree: rank " + std::to_string(w.rank) + " calls " + op + " (collective #" + std::to_string(mine.seq) + ") but " +
               rank_name(r) + " calls " + theirs + " (collective #" + std::to_string(h.seq) + "); every rank must call the same collectives "
               "in the same order with the same dtypes and shapes. No data was exchanged");
  }
  return all;
}

std::string dead_peers() {
  World& w = world();
  std::string dead;
  for (int r = 0; r < w.size; ++r)
    if (r != w.rank && seen_dead(r)) dead += (dead.empty() ? "" : ", ") + rank_name(r);
  return dead;
}

[[noreturn]] void break_world(ErrorCode code, const std::string& op, const std::string& why) {
  World& w = world();
  w.broken = true;
  w.broken_why = why;
  fail(code, op, why);
}

Transfer::Transfer(const std::string& op) {
  Watchdog& d = dog();
  std::lock_guard<std::mutex> lock(d.mu);
  if (!d.started) {
    std::thread(watch).detach();
    d.started = true;
  }
  ticket_ = d.next++;
  d.armed = ticket_;
  d.op = op;
  d.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(state().timeout_s));
  d.cv.notify_all();
}

Transfer::~Transfer() {
  Watchdog& d = dog();
  std::lock_guard<std::mutex> lock(d.mu);
  if (d.armed == ticket_) d.armed = 0;
  d.cv.notify_all();
}

}  // namespace detail

using detail::check;
using detail::state;

void init() {
  detail::World& w = state();
  if (w.up) return;
  int inited = 0, finalized = 0;
  MPI_Initialized(&inited);
  MPI_Finalized(&finalized);
  if (finalized) throw Error(ErrorCode::failed_precondition, "kiln::dist::init: MPI was already finalized in this process; MPI cannot start twice");
  double timeout = w.timeout_set ? w.timeout_s : detail::env_timeout();
  if (!inited) {
    int provided = 0;
    int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
    if (rc != MPI_SUCCESS) throw Error(ErrorCode::unavailable, "kiln::dist::init: MPI_Init_thread failed (" + std::to_string(rc) + ")");
    w.owns_mpi = true;
  }
  MPI_Query_thread(&w.thread_level);
  if (w.thread_level < MPI_THREAD_SERIALIZED)
    throw Error(ErrorCode::failed_precondition, "kiln::dist::init: MPI runs at thread level " + std::to_string(w.thread_level) +
                " but kiln::dist needs MPI_THREAD_SERIALIZED or more (a program that initializes MPI itself: use MPI_Init_thread)");
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  check(MPI_Comm_rank(MPI_COMM_WORLD, &w.rank), "init");
  check(MPI_Comm_size(MPI_COMM_WORLD, &w.size), "init");
  check(MPI_Comm_dup(MPI_COMM_WORLD, &w.headers), "init");
  check(MPI_Comm_dup(MPI_COMM_WORLD, &w.data), "init");
  MPI_Comm_set_errhandler(w.headers, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(w.data, MPI_ERRORS_RETURN);
  // every rank's pid and host, for naming ranks and seeing dead ones on this host
  struct Who { int32_t pid; char host[detail::kHostChars]; char place[2 * detail::kHostChars]; } me{static_cast<int32_t>(getpid()), {}, {}};
  gethostname(me.host, sizeof me.host - 1);
  std::snprintf(me.place, sizeof me.place, "%s", detail::where_am_i().c_str());
  std::vector<Who> all(static_cast<size_t>(w.size));
  check(MPI_Allgather(&me, sizeof me, MPI_BYTE, all.data(), sizeof me, MPI_BYTE, w.headers), "init");
  for (const Who& x : all) {
    w.pids.push_back(x.pid);
    w.hosts.emplace_back(x.host, strnlen(x.host, sizeof x.host));
    w.places.emplace_back(x.place, strnlen(x.place, sizeof x.place));
  }
  detail::create_half_ops();
  if (!w.timeout_set) w.timeout_s = timeout;
  w.broken = false;
  w.seq = 0;
  w.up = true;
}

bool initialized() { return state().up; }
int rank() { return detail::world().rank; }
int world_size() { return detail::world().size; }

void finalize() {
  detail::World& w = state();
  if (!w.up) return;
  w.up = false;
  if (w.broken) return;  // MPI_Finalize would wait for the missing rank
  detail::free_half_ops();
  MPI_Comm_free(&w.headers);
  MPI_Comm_free(&w.data);
  w.pids.clear();
  w.hosts.clear();
  w.places.clear();
  if (w.owns_mpi) MPI_Finalize();
}

void barrier() {
  detail::refuse_in_jit("barrier");
  detail::agree(detail::header(detail::Kind::barrier, "barrier"));  // the exchange is itself a barrier
}

void set_timeout(double seconds) {
  if (!(seconds > 0)) throw Error(ErrorCode::invalid_argument, "kiln::dist::set_timeout: " + std::to_string(seconds) + " s: give a positive number of seconds");
  state().timeout_s = seconds;
  state().timeout_set = true;
}
double timeout() { return state().timeout_s; }

std::string describe() {
  detail::World& w = detail::world();
  char ver[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0, major = 0, minor = 0;
  MPI_Get_library_version(ver, &len);
  MPI_Get_version(&major, &minor);
  std::string lib(ver, static_cast<size_t>(len));
  if (size_t comma = lib.find(','); comma != std::string::npos) lib.resize(comma);
  return "kiln::dist over " + lib + " (MPI " + std::to_string(major) + "." + std::to_string(minor) + "), " + detail::rank_name(w.rank) +
         " of " + std::to_string(w.size);
}

}  // namespace kiln::dist
