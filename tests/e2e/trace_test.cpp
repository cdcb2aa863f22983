// tests/e2e/trace_test.cpp - KILN_TRACE=FILE.json and kiln::Profile over several device lanes.
//
// ctest runs this executable with two cpu devices (cpu_two_devices.toml) and KILN_TRACE set, so
// the trace is on from the first call, as for a user; the test writes it with trace::flush(),
// checks it is JSON, and reads its events back (the recorder writes one event per line).
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "codegen/pipeline.hpp"
#include "json_check.hpp"
#include "kiln/kiln.hpp"
#include "kiln/profile.hpp"
#include "schedule/kernelize.hpp"
#include "support/env.hpp"
#include "support/trace.hpp"

using namespace kiln;

namespace {

const std::vector<std::string> kDevices{"cpu:0", "cpu:1"};

struct Event {
  std::string cat, name;
  double ts = 0, dur = 0;
  int pid = 0, tid = 0;
};

struct TraceFile {
  std::string text;
  std::vector<Event> events;
  std::map<std::pair<int, int>, std::string> lanes;  // (pid, tid) -> its name
  int lane_of(const std::string& name) const {
    for (const auto& [key, n] : lanes)
      if (n == name) return key.second;
    return -1;
  }
};

TraceFile read_trace() {
  TraceFile t;
  std::ifstream in(getenv_str("KILN_TRACE"));
  std::stringstream ss;
  ss << in.rdbuf();
  t.text = ss.str();
  static const std::regex event(
      R"re(^\{"ph": "X", "cat": "([^"]*)", "name": "((?:[^"\\]|\\.)*)", "ts": ([0-9.]+), "dur": ([0-9.]+).*"pid": (\d+), "tid": (\d+)\},?$)re");
  static const std::regex lane(R"re("name": "thread_name", "pid": (\d+), "tid": (\d+), "args": \{"name": "([^"]*)"\})re");
  std::istringstream lines(t.text);
  std::smatch m;
  for (std::string line; std::getline(lines, line);) {
    if (std::regex_search(line, m, event))
      t.events.push_back({m[1], m[2], std::stod(m[3]), std::stod(m[4]), std::stoi(m[5]), std::stoi(m[6])});
    else if (std::regex_search(line, m, lane))
      t.lanes[{std::stoi(m[1]), std::stoi(m[2])}] = m[3];
  }
  return t;
}

size_t count(const TraceFile& t, const std::string& cat, const std::string& name_prefix, int pid = 0, int tid = 0) {
  size_t n = 0;
  for (const Event& e : t.events)
    n += e.cat == cat && e.name.rfind(name_prefix, 0) == 0 && (!pid || e.pid == pid) && (!tid || e.tid == tid);
  return n;
}

}  // namespace

TEST(Trace, AChromeTraceOfEveryStepLaunchAndCopyOnItsLane) {
  ASSERT_TRUE(trace::on()) << "ctest runs this test with KILN_TRACE set";
  // a sharded program (a launch on each device, an all-reduce's copies), through a Jit: capture,
  // then replays
  Jit f([](const std::vector<Tensor>& in, const std::vector<BoundVariable>&) {
    return std::vector<Tensor>{((in[0] * 2 + 1).sum({0}) * 3).to("cpu:0")};
  });
  for (int call = 0; call < 4; ++call) {
    std::vector<float> v(64);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 7) + static_cast<float>(call);
    Tensor x = Tensor::from_vector<float>(v, {8, 8}, "cpu:0").shard(kDevices, 0);
    std::vector<float> got = f({x})[0].to_vector<float>();
    for (int j = 0; j < 8; ++j) {
      float want = 0;
      for (int i = 0; i < 8; ++i) want += v[i * 8 + j] * 2 + 1;
      EXPECT_FLOAT_EQ(got[j], want * 3) << "call " << call << " column " << j;
    }
  }
  ASSERT_TRUE(trace::flush());

  TraceFile t = read_trace();
  std::string why;
  ASSERT_TRUE(test::is_valid_json(t.text, &why)) << why;
  EXPECT_NE(t.text.find(R"("name": "process_name", "pid": 1, "args": {"name": "host"})"), std::string::npos);
  EXPECT_NE(t.text.find(R"("name": "process_name", "pid": 2, "args": {"name": "devices"})"), std::string::npos);
  ASSERT_GT(t.events.size(), 20u);

  // every device has a lane of its own with its launches; copies on a device lane
  for (const std::string& d : kDevices) {
    int lane = t.lane_of(d);
    ASSERT_GT(lane, 0) << "no lane for " << d;
    EXPECT_GT(count(t, "launch", "", 2, lane), 0u) << "no launch on " << d << "'s lane";
  }
  EXPECT_GT(count(t, "copy", "copy ", 2), 0u);
  // the host: every step of the scheduler and codegen, render, compile, load, the Jit's capture
  // and replays, each schedule and realize
  std::set<std::string> steps;
  for (const Event& e : t.events)
    if (e.cat == "step" && e.pid == 1) steps.insert(e.name);
  std::vector<std::string> want{"normalize", "linearize", "render", "compile"};
  for (const char* s : schedule_pass_names()) want.push_back(s);
  for (const CodegenPass& p : codegen_passes()) want.push_back(p.name);
  for (const std::string& s : want) EXPECT_TRUE(steps.count(s)) << "no event for step '" << s << "'";
  EXPECT_EQ(count(t, "jit", "jit capture"), 1u);
  EXPECT_GE(count(t, "jit", "jit replay ("), 2u);
  EXPECT_GT(count(t, "codegen", "codegen "), 0u);
  EXPECT_GT(count(t, "load", "load "), 0u);
  EXPECT_GT(count(t, "schedule", "schedule"), 0u);
  EXPECT_GT(count(t, "realize", "realize"), 0u);

  // On each lane the events nest or follow each other (a viewer draws them as a stack): sorted by
  // start (the longer first on a tie), each ends within the innermost open one that contains it.
  std::map<std::pair<int, int>, std::vector<Event>> by_lane;
  for (const Event& e : t.events) by_lane[{e.pid, e.tid}].push_back(e);
  constexpr double kSlack = 0.002;  // the file's timestamps are rounded to nanoseconds
  for (auto& [lane, evs] : by_lane) {
    std::sort(evs.begin(), evs.end(), [](const Event& a, const Event& b) { return a.ts != b.ts ? a.ts < b.ts : a.dur > b.dur; });
    std::vector<const Event*> open;
    for (const Event& e : evs) {
      EXPECT_GE(e.dur, 0);
      while (!open.empty() && open.back()->ts + open.back()->dur <= e.ts + kSlack) open.pop_back();
      if (!open.empty()) {
        EXPECT_LE(e.ts + e.dur, open.back()->ts + open.back()->dur + kSlack)
            << "'" << e.name << "' overlaps '" << open.back()->name << "' on lane " << t.lanes[lane];
      }
      open.push_back(&e);
    }
  }
}

// A Profile made on the calling thread sees the launches of every device the program runs on,
// also those another thread runs (each device's lane: runtime/lanes.hpp).
TEST(Profile, SeesTheLaunchesOfEveryDeviceLane) {
  Tensor x = Tensor::from_vector<float>(std::vector<float>(64, 1.5f), {8, 8}, "cpu:0").shard(kDevices, 0).realize();
  Profile prof;
  (x * 2 + 1).contiguous().realize();
  std::set<std::string> seen;
  for (const KernelRun& r : prof.runs()) seen.insert(r.device);
  for (const std::string& d : kDevices) EXPECT_TRUE(seen.count(d)) << "no launch on " << d << " in:\n" << prof.table();
}
