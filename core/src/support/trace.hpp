// support/trace.hpp - KILN_TRACE=FILE.json: where a run's time goes, as a Chrome trace.
//
// With KILN_TRACE set, the core records complete events ("ph":"X": a name, a start and a
// duration) and writes them at exit as a Chrome trace-event file (JSON, one event per line), which
// ui.perfetto.dev and chrome://tracing open. Two processes in the picture:
//   host     one lane per host thread: realize, each schedule step, each codegen step, render,
//            compile, load, Jit captures and replays
//   devices  one lane per device ("cpu:0", "opencl:0"): every kernel launch and every copy, with
//            the time it took on the device
// While tracing, launches wait for their kernel (as under a kiln::Profile) so a device lane shows
// what ran there and for how long. Events are kept in memory until the file is written.
//
// Off (the default) every call here is one relaxed load of a flag.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace kiln::trace {

bool on();          // KILN_TRACE is set (read once)
int64_t now_ns();   // the trace's clock (steady)

// One event: `name` of category `cat` ran from start_ns to end_ns (now_ns() values) on `device`'s
// lane, or on the calling thread's host lane when `device` is empty. `args` is a JSON object's
// members ("\"bytes\": 64"), or empty.
void event(std::string_view cat, std::string_view name, int64_t start_ns, int64_t end_ns, std::string_view device = {},
           std::string_view args = {});

// An event around a scope on the calling thread's host lane (nothing when tracing is off). The
// name is built only when tracing: pass a callable for names that cost something to make.
class Span {
 public:
  Span(const char* cat, std::string_view name) : on_(on()) {
    if (on_) start(cat, std::string(name));
  }
  template <typename MakeName>
    requires requires(MakeName f) { std::string(f()); }
  Span(const char* cat, MakeName&& make_name) : on_(on()) {
    if (on_) start(cat, std::string(make_name()));
  }
  ~Span();
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;
  void set_args(std::string args) { args_ = std::move(args); }  // members added to the event

 private:
  void start(const char* cat, std::string name);
  bool on_;
  const char* cat_ = "";
  std::string name_, args_;
  int64_t start_ns_ = 0;
};

// Writes the file now (the run keeps recording; the exit writes it again, complete). Tests use it;
// false when tracing is off or the file cannot be written (which is said on stderr once).
bool flush();

}  // namespace kiln::trace
