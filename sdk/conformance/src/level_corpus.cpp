// sdk/conformance/src/level_corpus.cpp - level 4: every op-corpus case on the device, compared
// with the reference executor.
#include "kit.hpp"
#include "op_corpus.hpp"

namespace kiln::conformance {

namespace {

// A dtype the device neither computes in nor gets emulated by the core (only the half types are).
std::string missing_dtype(const backend::TargetCaps& t, DType d) {
  Scalar s = d.scalar();
  if (s == Scalar::float16 || s == Scalar::bfloat16) return "";
  uint32_t lir = backend::lir_dtype(d);
  return lir < KILN_LIR_DTYPE_COUNT && !t.supports_dtype(lir) ? d.name() : "";
}

void run_corpus_case(Kit& k, const testing::OpCase& c) {
  backend::Device& d = k.kernel_device();
  for (const testing::HostArray& a : c.inputs)
    if (std::string m = missing_dtype(d.target(), a.dtype); !m.empty()) throw Skip{"the device has no " + m};
  testing::HostArray got = testing::run_case(c, k.device_name());
  testing::HostArray want = testing::expected(c);
  std::string err = testing::compare(got, want, std::max(c.rtol, 2e-6), std::max(c.atol, 1e-6));
  require(err.empty(), err);
}

}  // namespace

void add_corpus_tests(std::vector<TestCase>& t) {
  static const std::vector<testing::OpCase> cases = testing::op_corpus();
  for (const testing::OpCase& c : cases)
    t.push_back({4, "L4.corpus." + c.name, [&c](Kit& k) { run_corpus_case(k, c); }});
}

}  // namespace kiln::conformance
