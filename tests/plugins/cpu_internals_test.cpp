// tests/plugins/cpu_internals_test.cpp - pieces of the cpu plugin tested directly (compiled into
// this test from plugins/cpu): the clang driver, the in-process LLVM pipeline, the ELF loader's
// relocation kinds, the thread pool, the sysfs cache sizes.
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "compiler.hpp"
#include "config.hpp"
#include "image.hpp"
#include "kiln/sdk.hpp"
#include "sysinfo.hpp"
#include "thread_pool.hpp"

extern char** environ;

namespace kiln::cpu {
namespace {

CompilerConfig object_config() {
  CompilerConfig c;
  c.compiler = "clang-15";
  c.flags = {"-O2", "-ffreestanding", "-fno-builtin", "-fPIC", "-nostdlib"};
  return c;
}

TEST(CpuCompiler, MissingCompilerSaysHowToFixIt) {
  CompilerConfig c = object_config();
  c.compiler = "clang-kiln-missing-99";
  Compiler compiler(c, "avx2");
  std::string log;
  try {
    compiler.compile("void k(void) {}", "k", "", log);
    FAIL();
  } catch (const sdk::Error& e) {
    EXPECT_EQ(e.code, KILN_STATUS_FAILED_PRECONDITION);
    EXPECT_NE(e.message.find("cannot run 'clang-kiln-missing-99': No such file or directory"), std::string::npos) << e.message;
    EXPECT_NE(e.message.find("apt-get install clang-15"), std::string::npos) << e.message;
    EXPECT_NE(e.message.find("[backends.cpu.options] compiler"), std::string::npos) << e.message;
  }
  EXPECT_THROW(compiler.cache_key(), sdk::Error);
}

TEST(CpuCompiler, ExtraOptionsAndWarningsReachTheLog) {
  Compiler compiler(object_config(), "");
  std::string log;
  std::string obj = compiler.compile("int k(void) { int unused; return 0; }", "k", "-Wunused-variable -DX=1", log);
  EXPECT_FALSE(obj.empty());
  EXPECT_NE(log.find("unused variable"), std::string::npos) << log;
}

// Data relocations (R_X86_64_64 in .data.rel.ro), GOT relocations to a host variable, a COMMON
// symbol, jump tables in .rodata (PC32 into .text) and a call into libc through a stub.
const char* kRelocations = R"(
extern char** environ;
extern unsigned long strlen(const char*);
int counter;                                   /* COMMON with -fcommon */
static int a = 1, b = 2;
int* const table[2] = {&a, &b};                /* absolute pointers: R_X86_64_64 */
char*** where_is_environ(void) { return &environ; }   /* GOTPCREL */
int bump(void) { return ++counter; }
unsigned long length(const char* s) { return strlen(s); }   /* PLT32 -> stub -> libc */
int pick(int i) { return *table[i & 1]; }
int sw(int x) { switch (x) { case 0: return 11; case 1: return 22; case 2: return 33; case 3: return 44;
                             case 4: return 55; case 5: return 66; default: return -1; } }
)";

// Addresses a constant apart (a tile's loads along a row of weights: sext(i + 576)) share one
// base after the pipeline, the constants as offsets x86 folds into its addressing modes; without
// that step a sign extension per address is left.
TEST(CpuLlvm, ConstantAddressOffsetsAreSplitOff) {
  const std::string ir = R"(
define void @k(ptr noalias %out, ptr noalias %w, i32 %i, i32 %j) {
entry:
  %b = add i32 %i, %j
  %a = add nsw i32 %b, 576
  %c = add nsw i32 %b, 1152
  %p0 = getelementptr inbounds float, ptr %w, i32 %b
  %p1 = getelementptr inbounds float, ptr %w, i32 %a
  %p2 = getelementptr inbounds float, ptr %w, i32 %c
  %x0 = load float, ptr %p0
  %x1 = load float, ptr %p1
  %x2 = load float, ptr %p2
  %s = fadd float %x0, %x1
  %t = fadd float %s, %x2
  store float %t, ptr %out
  ret void
}
)";
  const std::string out = llvm_optimized_ir(ir, "x86-64-v2");
  EXPECT_NE(out.find(", i64 576"), std::string::npos) << out;
  EXPECT_NE(out.find(", i64 1152"), std::string::npos) << out;
  EXPECT_EQ(out.find("sext i32 %a"), std::string::npos) << out;
  EXPECT_EQ(out.find("sext i32 %c"), std::string::npos) << out;
}

// kiln's pipeline (not O2) keeps what kernels need of O2: a kernel body inlined into its
// launch wrapper, accumulators held in allocas turned into SSA values.
TEST(CpuLlvm, BodiesAreInlinedAndAccumulatorsLeaveMemory) {
  const std::string ir = R"(
define internal void @body(ptr noalias %out, ptr noalias %in) #0 {
entry:
  %acc = alloca float, align 4
  store float 0.0, ptr %acc
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %next, %loop ]
  %p = getelementptr inbounds float, ptr %in, i32 %i
  %x = load float, ptr %p
  %a = load float, ptr %acc
  %s = fadd float %a, %x
  store float %s, ptr %acc
  %next = add nsw i32 %i, 1
  %go = icmp slt i32 %next, 100
  br i1 %go, label %loop, label %done
done:
  %r = load float, ptr %acc
  store float %r, ptr %out
  ret void
}
define void @k(ptr %bufs) {
entry:
  %b0 = load ptr, ptr %bufs
  %p1 = getelementptr inbounds ptr, ptr %bufs, i64 1
  %b1 = load ptr, ptr %p1
  call void @body(ptr %b0, ptr %b1)
  ret void
}
attributes #0 = { alwaysinline nounwind }
)";
  const std::string out = llvm_optimized_ir(ir, "x86-64-v2");
  EXPECT_EQ(out.find("call void @body"), std::string::npos) << out;
  EXPECT_EQ(out.find("alloca"), std::string::npos) << out;
}

// A loop kiln leaves scalar (a stride-2 max pool's output row: its loads are not contiguous, so
// no UPCAST vectorizes it) is vectorized by LLVM's loop vectorizer; without it such a pool ran
// 3.7x slower than under O2.
TEST(CpuLlvm, LoopsKilnLeftScalarAreVectorized) {
  const std::string ir = R"(
define void @pool(ptr noalias %out, ptr noalias %in) {
entry:
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %next, %loop ]
  %j = mul nsw i32 %i, 2
  %pa = getelementptr inbounds float, ptr %in, i32 %j
  %a = load float, ptr %pa
  %pb = getelementptr inbounds float, ptr %pa, i32 1
  %b = load float, ptr %pb
  %gt = fcmp ogt float %a, %b
  %m = select i1 %gt, float %a, float %b
  %po = getelementptr inbounds float, ptr %out, i32 %i
  store float %m, ptr %po
  %next = add nsw i32 %i, 1
  %go = icmp slt i32 %next, 1024
  br i1 %go, label %loop, label %done
done:
  ret void
}
)";
  const std::string out = llvm_optimized_ir(ir, "x86-64-v2");
  EXPECT_NE(out.find("x float>"), std::string::npos) << out;
}

TEST(CpuElfLoader, AppliesEveryRelocationKindClangEmits) {
  CompilerConfig c = object_config();
  c.flags.push_back("-fcommon");
  Compiler compiler(c, "");
  std::string log;
  std::string obj = compiler.compile(kRelocations, "", "", log);
  std::unique_ptr<Image> image = load_image(obj);
  auto where = reinterpret_cast<char*** (*)()>(image->symbol("where_is_environ"));
  auto bump = reinterpret_cast<int (*)()>(image->symbol("bump"));
  auto length = reinterpret_cast<unsigned long (*)(const char*)>(image->symbol("length"));
  auto pick = reinterpret_cast<int (*)(int)>(image->symbol("pick"));
  auto sw = reinterpret_cast<int (*)(int)>(image->symbol("sw"));
  ASSERT_TRUE(where && bump && length && pick && sw);
  EXPECT_EQ(where(), &environ);
  EXPECT_EQ(bump(), 1);
  EXPECT_EQ(bump(), 2);
  EXPECT_EQ(length("kiln"), 4u);
  EXPECT_EQ(pick(0), 1);
  EXPECT_EQ(pick(1), 2);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(sw(i), 11 * (i + 1));
  EXPECT_EQ(sw(9), -1);
  EXPECT_EQ(image->symbol("a"), nullptr);  // static: not exported
  EXPECT_EQ(image->symbol("no_such_symbol"), nullptr);
}

TEST(CpuElfLoader, RejectsWhatItCannotLoad) {
  for (std::string_view bad : {std::string_view("short"), std::string_view("\x7f" "ELF but truncated")}) {
    try {
      load_object(bad);
      ADD_FAILURE() << "accepted garbage";
    } catch (const sdk::Error& e) {
      EXPECT_EQ(e.code, KILN_STATUS_INVALID_ARGUMENT);
      EXPECT_NE(e.message.find("cannot load the kernel object"), std::string::npos) << e.message;
    }
  }
  Compiler compiler(object_config(), "");
  std::string log;
  std::string obj = compiler.compile("_Thread_local int t; int get(void) { return t; }", "", "", log);
  try {
    load_object(obj);
    ADD_FAILURE() << "accepted thread-local storage";
  } catch (const sdk::Error& e) {
    EXPECT_NE(e.message.find("thread-local"), std::string::npos) << e.message;
  }
}

TEST(CpuThreadPool, EveryItemRunsExactlyOnce) {
  for (unsigned threads : {1u, 2u, 4u}) {
    ThreadPool pool(threads);
    for (uint64_t total : {uint64_t{1}, uint64_t{2}, uint64_t{3}, uint64_t{97}, uint64_t{10000}}) {
      std::vector<std::atomic<int>> hits(total);
      struct Ctx {
        std::vector<std::atomic<int>>* hits;
      } ctx{&hits};
      for (int round = 0; round < 20; ++round)
        pool.run(total, [](const void* c, uint64_t b, uint64_t e) {
          auto* h = static_cast<const Ctx*>(c)->hits;
          for (uint64_t i = b; i < e; ++i) (*h)[i].fetch_add(1, std::memory_order_relaxed);
        }, &ctx);
      for (uint64_t i = 0; i < total; ++i) ASSERT_EQ(hits[i].load(), 20) << threads << " threads, item " << i << "/" << total;
    }
  }
}

TEST(CpuThreadPool, WorkersSleepAndWakeUp) {
  ThreadPool pool(2);
  std::atomic<uint64_t> sum{0};
  auto body = [](const void* c, uint64_t b, uint64_t e) {
    for (uint64_t i = b; i < e; ++i) static_cast<std::atomic<uint64_t>*>(const_cast<void*>(c))->fetch_add(i);
  };
  pool.run(100, body, &sum);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));  // longer than the spin: workers sleep
  pool.run(100, body, &sum);
  EXPECT_EQ(sum.load(), 2u * 4950u);
}

TEST(CpuThreadPool, ConcurrentCallersAreSerialised) {
  ThreadPool pool(2);
  std::atomic<uint64_t> sum{0};
  auto body = [](const void* c, uint64_t b, uint64_t e) {
    static_cast<std::atomic<uint64_t>*>(const_cast<void*>(c))->fetch_add(e - b);
  };
  std::vector<std::thread> callers;
  for (int t = 0; t < 3; ++t)
    callers.emplace_back([&] {
      for (int i = 0; i < 200; ++i) pool.run(64, body, &sum);
    });
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(sum.load(), 3u * 200u * 64u);
}

// devices = N: the cores are split between the devices unless threads is given; bad values are
// INVALID_ARGUMENT naming the option (the host's CpuInfo is simulated: no host's core count counts).
TEST(CpuConfig, DevicesSplitTheCoresUnlessThreadsIsGiven) {
  auto config = [](const std::string& toml, unsigned cores) {
    CpuInfo cpu;
    cpu.cores = cores;
    return read_config(sdk::Options::parse(toml), cpu);
  };
  EXPECT_EQ(config("", 8).devices, 1u);
  EXPECT_EQ(config("", 8).threads, 8u);
  EXPECT_EQ(config("devices = 4", 8).threads, 2u);
  EXPECT_EQ(config("devices = 3", 8).threads, 2u);
  EXPECT_EQ(config("devices = 4", 2).threads, 1u);
  EXPECT_EQ(config("devices = 2\nthreads = 3", 2).threads, 3u);
  EXPECT_EQ(config("devices = 2", 2).devices, 2u);
  for (const char* bad : {"devices = 0", "devices = 65", "devices = -1"}) {
    try {
      config(bad, 2);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const sdk::Error& e) {
      EXPECT_EQ(e.code, KILN_STATUS_INVALID_ARGUMENT) << bad;
      EXPECT_NE(e.message.find("option 'devices' must be between 1 and 64"), std::string::npos) << e.message;
    }
  }
}

// A sysfs cache directory as Linux lays it out: the instruction cache and the shared L3 are not a
// core's data caches; sizes come in K and M.
TEST(CpuSysinfo, CacheSizesComeFromSysfs) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("kiln-sysfs-" + std::to_string(::getpid()));
  auto index = [&](int i, const char* level, const char* type, const char* size) {
    fs::create_directories(dir / ("index" + std::to_string(i)));
    std::ofstream(dir / ("index" + std::to_string(i)) / "level") << level << "\n";
    std::ofstream(dir / ("index" + std::to_string(i)) / "type") << type << "\n";
    std::ofstream(dir / ("index" + std::to_string(i)) / "size") << size << "\n";
  };
  index(0, "1", "Data", "48K");
  index(1, "1", "Instruction", "64K");
  index(2, "2", "Unified", "2048K");
  index(3, "3", "Unified", "260M");
  CacheSizes c = read_caches(dir.string());
  EXPECT_EQ(c.l1d, 48u << 10);
  EXPECT_EQ(c.l2, 2u << 20);
  EXPECT_EQ(c.last_level, uint64_t{260} << 20);
  fs::remove_all(dir / "index3");
  fs::remove_all(dir / "index2");
  EXPECT_EQ(read_caches(dir.string()).l2, 0u) << "no L2: unknown";
  fs::remove_all(dir);
  CacheSizes none = read_caches(dir.string());
  EXPECT_EQ(none.l1d + none.l2 + none.last_level, 0u) << "no sysfs (a container without it): unknown";
}

}  // namespace
}  // namespace kiln::cpu

