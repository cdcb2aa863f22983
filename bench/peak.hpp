// bench/peak.hpp - the machine's roofs for `kiln bench`'s "% of peak": the fp32 FMA rate and the
// copy and read bandwidth of the host CPU, measured with plain C++ loops.
//
// How: `threads` threads (the device's worker count) each run, after a common start,
//  - fma:  16 (AVX-512) or 12 (AVX2) independent chains of vector fused multiply-adds on
//          registers, no memory (the widest of AVX-512F, AVX2+FMA or scalar the CPU has);
//  - copy: dst[i] = src[i] + 0 over their share of two 16M-float arrays (64 MiB each, the size of
//          the elementwise workload's input and output), plain stores; GB/s counts bytes read
//          plus bytes written, without write-allocate traffic (as STREAM does);
//  - read: an integer sum over their share of one 16M-float array (the sum workload's size).
// Each is the best of a few repetitions after the pages are touched. The whole measurement takes
// about half a second; its result is kept in the compile cache directory (machine-peak-<T>t.txt,
// keyed by the CPU's model name and T, and never evicted: eviction only takes *.bin entries), so
// later runs read it. These are the roofs of the host CPU: they apply to the cpu backend and to
// CPU-type OpenCL devices (PoCL), not to GPUs.
#pragma once
#include <string>

namespace kiln::bench {

struct MachinePeak {
  double gflops = 0;    // fp32 FMA GFLOP/s, all threads
  double copy_gbs = 0;  // GB/s, read + write
  double read_gbs = 0;  // GB/s
  unsigned threads = 0;
  std::string isa;          // "avx512", "avx2" or "scalar": the FMA loop that ran
  bool from_cache = false;  // read from the compile cache directory instead of measured now
};

// The roofs on `threads` threads: read from the compile cache directory (KILN_CACHE_DIR; nothing
// is cached when it is off) unless `remeasure` or there is none, else measured and stored there.
// A remeasurement stores, per roof, the better of it and the cached figure (a neighbour on a
// shared machine only lowers a measurement; a roof is what the machine can do).
MachinePeak machine_peak(unsigned threads, bool remeasure = false);

// Measures now (no cache).
MachinePeak measure_machine_peak(unsigned threads);

}  // namespace kiln::bench
