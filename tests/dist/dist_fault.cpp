// tests/dist/dist_fault.cpp - one rank fails; every other rank must get a kiln::Error naming it,
// never hang (run_fault.cmake launches it under mpirun and checks what every rank printed).
//
//   dist_fault kill  [T]  rank 1 kills itself (SIGKILL) instead of joining an all_reduce
//   dist_fault throw [T]  rank 1 throws a kiln::Error that nothing catches (std::terminate: abort)
//   dist_fault hang  [T]  rank 1 sleeps past the timeout (alive: only the watchdog's deadline tells)
//   dist_fault grads [T]  an overlapped all_reduce_grads: rank 1 is killed (SIGKILL) in its backward
//                         pass, after the header, while rank 0 waits in the transfer of a bucket
//
// A survivor prints "FAULT-OK rank R: <the error>" and ends at once (_exit: MPI_Finalize would
// wait for the missing rank); "FAULT-BAD rank R: ..." when the collective returned or threw
// something else. The timeout T (seconds, default 3) is set after a first good collective, so that
// a slow start on a loaded machine (kernels compiling) is not mistaken for the fault.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "kiln/dist.hpp"

// A survivor's collective, which must fail naming rank 1; then the world is broken and the next
// collective fails at once, naming the first fault. Ends the process (see above).
template <typename F>
[[noreturn]] void survive(int me, const char* what, F&& collective) {
  try {
    collective();
    std::printf("FAULT-BAD rank %d: %s returned without rank 1\n", me, what);
  } catch (const kiln::Error& e) {
    std::printf("FAULT-OK rank %d: code %s: %s\n", me, kiln::error_code_name(e.code()), e.what());
    try {
      kiln::dist::barrier();
      std::printf("FAULT-BAD rank %d: a barrier after the fault returned\n", me);
    } catch (const kiln::Error& again) {
      std::printf("FAULT-AGAIN rank %d: %s\n", me, again.what());
    }
  }
  std::fflush(stdout);
  kiln::dist::finalize();  // returns at once: the world is broken
  _exit(0);
}

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode != "kill" && mode != "throw" && mode != "hang" && mode != "grads") {
    std::fprintf(stderr, "usage: dist_fault kill|throw|hang|grads\n");
    return 2;
  }
  kiln::dist::init();
  int me = kiln::dist::rank();
  kiln::Tensor x = kiln::Tensor::ones({1000});
  kiln::dist::all_reduce(x).realize();  // one good collective first: the world works
  kiln::dist::set_timeout(argc > 2 ? std::atof(argv[2]) : 3.0);
  if (mode == "grads") {
    // two 1 MiB gradients: two buckets. Rank 1's backward pass is long (a chain of matmuls in front
    // of the same shapes) and it is killed 0.3 s into it, after the header exchange.
    kiln::Tensor w1 = kiln::Tensor::ones({512, 512}).contiguous().realize().requires_grad_();
    kiln::Tensor w2 = kiln::Tensor::ones({512, 512}).contiguous().realize().requires_grad_();
    kiln::Tensor in = kiln::Tensor::full({64, 512}, 0.01);
    if (me == 1) {
      kiln::Tensor m = kiln::Tensor::full({512, 512}, 1.0 / 512);
      for (int i = 0; i < 400; ++i) in = in.matmul(m).contiguous();
      std::thread([] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        raise(SIGKILL);
      }).detach();
    }
    kiln::Tensor loss = in.matmul(w1).relu().matmul(w2).sum();
    loss.backward();
    survive(me, "all_reduce_grads", [&] { kiln::dist::all_reduce_grads({w1, w2}, {loss}); });
  }
  if (me == 1) {
    if (mode == "kill") raise(SIGKILL);
    if (mode == "throw") throw kiln::Error(kiln::ErrorCode::internal, "rank 1 fails on purpose (dist_fault throw)");
    sleep(static_cast<unsigned>(kiln::dist::timeout()) + 1);  // hang: alive, silent, then gone
    _exit(0);
  }
  survive(me, "the all_reduce", [&] { kiln::dist::all_reduce(x).realize(); });
}
