// fuzz_loader.cpp - kiln_onnx_fuzz: mutated models must load or be refused with a kiln::Error.
//
// Seeds: ONNX's node-test models that load in this build, and a few models with initializers
// built here (raw and typed data fields). Each case takes one seed and mutates it
// deterministically: its bytes (bit flips, truncations, inserted, deleted and copied bytes, varints
// rewritten to huge, negative or zero values) and its fields through ONNX's classes (dims, types,
// data sizes, external data, attributes, wiring, opsets). Then Model::from_bytes and, when that
// loads, run() on --device (default: the reference interpreter, which AddressSanitizer sees into)
// with feeds of the declared shapes (symbolic dims 1). Inputs or outputs past --max-numel elements
// and kernels iterating past --max-work points are not run (legitimate, but slow). A kiln::Error is
// a pass; any other exception, a crash (under AddressSanitizer/UBSan: dev.sh's ASan stage) or a
// case running past --timeout seconds (alarm) fails the program, naming the case: `--case N`
// reruns it alone. Case i of seed s draws from its own stream, so a rerun is exact.
//
// usage: kiln_onnx_fuzz [--seed S] [--iters N] [--case I] [--device D] [--timeout T] [--max-numel M]
//                       [--max-work W] [--max-seconds S] [--node-dir DIR] [--verbose]
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "kiln/onnx.hpp"
#include "model_builder.hpp"

namespace fs = std::filesystem;
using kiln::Tensor;

namespace {

struct Seed {
  std::string name, bytes;
};

// The case being run, for the alarm handler (async-signal-safe: a fixed buffer and write(2)).
char g_case[256];

void on_alarm(int) {
  const char msg[] = "kiln_onnx_fuzz: FAIL: the case ran past --timeout (a hang?): ";
  ssize_t ignored = write(STDERR_FILENO, msg, sizeof msg - 1);
  ignored = write(STDERR_FILENO, g_case, std::strlen(g_case));
  ignored = write(STDERR_FILENO, "\n", 1);
  (void)ignored;
  _exit(1);
}

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

std::vector<Seed> built_seeds() {
  namespace om = kiln::test::onnx_models;
  std::vector<Seed> out;
  out.push_back({"<scale_shift>", om::scale_shift().SerializeAsString()});
  out.push_back({"<dense_relu>", om::dense_relu().SerializeAsString()});
  // typed data fields instead of raw_data, an int64 initializer and a symbolic dim
  auto m = om::model(7);
  om::input(m, {"x", ::onnx::TensorProto::FLOAT, {"N", "2"}});
  om::output(m, {"y", ::onnx::TensorProto::FLOAT, {"N", "2"}});
  om::output(m, {"k", ::onnx::TensorProto::INT64, {"2"}});
  auto* w = m.mutable_graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(::onnx::TensorProto::FLOAT);
  w->add_dims(2);
  w->add_float_data(0.5f);
  w->add_float_data(-1.5f);
  auto* k = m.mutable_graph()->add_initializer();
  k->set_name("k0");
  k->set_data_type(::onnx::TensorProto::INT64);
  k->add_dims(2);
  k->add_int64_data(3);
  k->add_int64_data(-4);
  om::node(m, "Mul", {"x", "w"}, {"xw"});
  om::node(m, "Sub", {"xw", "x"}, {"y"});
  om::node(m, "Add", {"k0", "k0"}, {"k"});
  out.push_back({"<typed_fields>", m.SerializeAsString()});
  return out;
}

// Node-test models that load unmutated (a model kiln refuses anyway tests less of the loader).
std::vector<Seed> node_seeds(const fs::path& dir) {
  std::vector<fs::path> paths;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (fs::exists(e.path() / "model.onnx")) paths.push_back(e.path() / "model.onnx");
  std::sort(paths.begin(), paths.end());
  std::vector<Seed> out;
  for (const auto& p : paths) {
    std::string bytes = read_file(p);
    try {
      kiln::onnx::Model::from_bytes(bytes);
      out.push_back({p.parent_path().filename().string(), std::move(bytes)});
    } catch (const kiln::Error&) {
    }
  }
  return out;
}

// One mutation of `b`, described in `what`.
void mutate(std::string& b, std::mt19937_64& rng, std::string& what) {
  auto pick = [&](size_t n) { return n ? static_cast<size_t>(rng() % n) : 0; };
  const size_t at = pick(b.size() + 1);
  char note[96];
  switch (rng() % 7) {
    case 0: {  // flip a bit
      if (b.empty()) break;
      size_t i = pick(b.size());
      b[i] = static_cast<char>(b[i] ^ (1 << (rng() % 8)));
      std::snprintf(note, sizeof note, " flip@%zu", i);
      break;
    }
    case 1:  // truncate
      b.resize(at);
      std::snprintf(note, sizeof note, " cut@%zu", at);
      break;
    case 2: {  // insert random bytes
      size_t n = 1 + pick(8);
      std::string ins(n, '\0');
      for (char& c : ins) c = static_cast<char>(rng());
      b.insert(at, ins);
      std::snprintf(note, sizeof note, " insert%zu@%zu", n, at);
      break;
    }
    case 3: {  // delete a range
      size_t n = std::min(b.size() - std::min(at, b.size()), 1 + pick(16));
      b.erase(std::min(at, b.size()), n);
      std::snprintf(note, sizeof note, " delete%zu@%zu", n, at);
      break;
    }
    case 4: {  // copy a chunk elsewhere (repeated fields, duplicated nodes)
      if (b.empty()) break;
      size_t from = pick(b.size()), n = std::min(b.size() - from, 1 + pick(32));
      b.insert(std::min(at, b.size()), b.substr(from, n));
      std::snprintf(note, sizeof note, " copy%zu@%zu->%zu", n, from, at);
      break;
    }
    default: {  // rewrite the varint that starts at a random byte: huge, negative, zero, one
      if (b.empty()) break;
      size_t i = pick(b.size()), end = i;
      while (end < b.size() && (static_cast<unsigned char>(b[end]) & 0x80)) ++end;
      end = std::min(end + 1, b.size());
      static const uint64_t kValues[] = {0, 1, 2, 127, 128, 0x7fffffff, 0xffffffff, 0x7fffffffffffffffull,
                                         0xffffffffffffffffull /* -1 */, 0xfffffffffffffff0ull, 1ull << 40};
      uint64_t v = kValues[rng() % (sizeof kValues / sizeof kValues[0])];
      std::string enc;
      do {
        enc += static_cast<char>((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
        v >>= 7;
      } while (v);
      b.replace(i, end - i, enc);
      std::snprintf(note, sizeof note, " varint@%zu", i);
      break;
    }
  }
  what += note;
}

// Structure-aware mutations: the model parsed with ONNX's classes, one field changed to a value a
// careless or hostile exporter could write, serialised again. Byte-level mutations mostly stop at
// the protobuf parser; these reach the loader's checks, the initializers and the operators.
const int64_t kDims[] = {-1, -7, 0, 1, 2, 3, int64_t{1} << 31, int64_t{1} << 40, INT64_MAX, INT64_MIN};

template <typename T>
T pick_from(std::mt19937_64& rng, const std::vector<T>& v) { return v[rng() % v.size()]; }

void mutate_tensor(::onnx::TensorProto& t, std::mt19937_64& rng, std::string& what) {
  const int64_t dim = kDims[rng() % (sizeof kDims / sizeof kDims[0])];
  switch (rng() % 7) {
    case 0:
      if (t.dims_size()) t.set_dims(static_cast<int>(rng() % t.dims_size()), dim), what += " tensor-dim=" + std::to_string(dim);
      break;
    case 1: t.add_dims(dim), what += " tensor-add-dim=" + std::to_string(dim); break;
    case 2: t.clear_dims(), what += " tensor-scalar"; break;
    case 3: t.set_data_type(static_cast<int32_t>(rng() % 26)), what += " tensor-type=" + std::to_string(t.data_type()); break;
    case 4: {
      std::string* raw = t.mutable_raw_data();
      raw->resize(rng() % 2 ? raw->size() / 2 : raw->size() + 1 + rng() % 8, '\x7f');
      what += " tensor-raw-size=" + std::to_string(raw->size());
      break;
    }
    case 5:  // typed fields beside (or instead of) raw data
      t.clear_raw_data();
      for (int i = static_cast<int>(rng() % 5); i > 0; --i) t.add_int64_data(dim), t.add_float_data(NAN), t.add_int32_data(-1);
      what += " tensor-typed-fields";
      break;
    default: {
      t.set_data_location(::onnx::TensorProto::EXTERNAL);
      t.clear_external_data();
      static const std::vector<std::string> kLocations = {"w.bin", "../w.bin", "/etc/hostname", "", "a/../../b", "."};
      auto* kv = t.add_external_data();
      kv->set_key("location");
      kv->set_value(pick_from(rng, kLocations));
      kv = t.add_external_data();
      kv->set_key(rng() % 2 ? "offset" : "length");
      kv->set_value(pick_from(rng, std::vector<std::string>{"-1", "99999999999999999999", "x", "0", "4"}));
      what += " tensor-external";
      break;
    }
  }
}

void mutate_model(::onnx::ModelProto& m, std::mt19937_64& rng, const std::vector<std::string>& ops, std::string& what) {
  auto* g = m.mutable_graph();
  std::vector<std::string> values{""};  // every name in the graph, for rewiring
  for (const auto& i : g->input()) values.push_back(i.name());
  for (const auto& i : g->initializer()) values.push_back(i.name());
  for (const auto& n : g->node())
    for (const auto& o : n.output()) values.push_back(o);
  const int64_t dim = kDims[rng() % (sizeof kDims / sizeof kDims[0])];
  ::onnx::NodeProto* n = g->node_size() ? g->mutable_node(static_cast<int>(rng() % g->node_size())) : nullptr;
  switch (rng() % 12) {
    case 0:
    case 1:
      if (g->initializer_size()) mutate_tensor(*g->mutable_initializer(static_cast<int>(rng() % g->initializer_size())), rng, what);
      break;
    case 2:  // an attribute: another type, extreme values, or a tensor attribute's tensor
      if (n && n->attribute_size()) {
        auto* a = n->mutable_attribute(static_cast<int>(rng() % n->attribute_size()));
        switch (rng() % 4) {
          case 0: a->set_type(static_cast<::onnx::AttributeProto::AttributeType>(rng() % 15)); what += " attr-type"; break;
          case 1: a->set_i(dim), a->add_ints(dim), a->set_f(rng() % 2 ? NAN : 1e30f), what += " attr-extreme"; break;
          case 2: a->clear_ints(), a->clear_floats(), a->clear_s(), a->clear_t(), what += " attr-empty"; break;
          default: mutate_tensor(*a->mutable_t(), rng, what); break;
        }
      }
      break;
    case 3:  // another operator on the same inputs
      if (n && !ops.empty()) n->set_op_type(pick_from(rng, ops)), what += " op=" + n->op_type();
      break;
    case 4:  // an input rewired, added or dropped
      if (n) {
        if (rng() % 3 == 0) n->add_input(pick_from(rng, values)), what += " add-input";
        else if (n->input_size()) n->set_input(static_cast<int>(rng() % n->input_size()), pick_from(rng, values)), what += " rewire";
        else what += " (no input)";
      }
      break;
    case 5:  // an output renamed (maybe to an existing name) or dropped
      if (n && n->output_size()) {
        if (rng() % 2) n->set_output(static_cast<int>(rng() % n->output_size()), pick_from(rng, values));
        else n->mutable_output()->RemoveLast();
        what += " output";
      }
      break;
    case 6: {  // a graph input's declaration
      if (!g->input_size()) break;
      auto* tt = g->mutable_input(static_cast<int>(rng() % g->input_size()))->mutable_type()->mutable_tensor_type();
      if (rng() % 2) tt->set_elem_type(static_cast<int32_t>(rng() % 26)), what += " input-type";
      else if (tt->shape().dim_size()) tt->mutable_shape()->mutable_dim(0)->set_dim_value(dim), what += " input-dim=" + std::to_string(dim);
      else tt->clear_shape(), what += " input-shape";
      break;
    }
    case 7:  // a graph output renamed or dropped
      if (g->output_size()) {
        if (rng() % 2) g->mutable_output(0)->set_name(pick_from(rng, values));
        else g->mutable_output()->RemoveLast();
        what += " graph-output";
      }
      break;
    case 8: {
      const int64_t v = pick_from(rng, std::vector<int64_t>{-1, 0, 1, 6, 7, 9, 11, 13, 17, 18, 23, 24, INT64_MAX});
      if (m.opset_import_size()) m.mutable_opset_import(0)->set_version(v);
      what += " opset=" + std::to_string(v);
      break;
    }
    case 9:  // a node dropped, duplicated or moved to the end
      if (n) {
        const int i = static_cast<int>(rng() % g->node_size());
        if (rng() % 2) *g->add_node() = g->node(i), what += " dup-node";
        else g->mutable_node()->SwapElements(i, g->node_size() - 1), g->mutable_node()->RemoveLast(), what += " drop-node";
      }
      break;
    case 10:  // a node's domain
      if (n) n->set_domain(rng() % 2 ? "com.microsoft" : "ai.onnx"), what += " domain";
      break;
    default:  // sparse initializers, value infos and other rarely used fields
      if (rng() % 2) g->add_sparse_initializer()->mutable_values()->set_name("sparse"), what += " sparse";
      else m.set_ir_version(static_cast<int64_t>(rng() % 12)), what += " ir";
      break;
  }
}

struct Options {
  uint64_t seed = 1;
  long iters = 300, only = -1;
  std::string device = "ref", node_dir = "/usr/share/libonnx-testdata/data/node";
  unsigned timeout = 20;
  int64_t max_numel = 1 << 16;
  double max_work = 1 << 22;
  double max_seconds = 0;
  bool verbose = false;
};

// Feeds of the declared shapes: floats uniform in [-1, 1), integers 0 (valid as any index), bools.
bool make_feeds(const kiln::onnx::Model& m, const Options& o, std::map<std::string, Tensor>& feeds) {
  for (const auto& in : m.inputs()) {
    kiln::Shape shape;
    int64_t numel = 1;
    for (const auto& d : in.dims) {
      int64_t v = 1;
      if (!d.empty() && std::isdigit(static_cast<unsigned char>(d[0]))) {
        if (d.size() > 12) return false;
        v = std::stoll(d);
      } else if (!d.empty() && d[0] == '-') {
        return false;  // a negative declared size: nothing to feed
      }
      if (__builtin_mul_overflow(numel, v, &numel) || numel > o.max_numel) return false;
      shape.push_back(v);
    }
    if (in.dtype.is_float()) feeds.emplace(in.name, Tensor::uniform(shape, -1, 1, in.dtype, o.device));
    else feeds.emplace(in.name, Tensor::zeros(shape, in.dtype, o.device));
  }
  return true;
}

enum class Outcome { refused, loaded, ran };

Outcome run_case(const std::string& bytes, const std::string& base_dir, const Options& o) {
  kiln::onnx::Model m = kiln::onnx::Model::from_bytes(bytes, base_dir);
  std::map<std::string, Tensor> feeds;
  if (!make_feeds(m, o, feeds)) return Outcome::loaded;
  auto outs = m.run(feeds, o.device);
  std::vector<Tensor> list;
  for (auto& [name, t] : outs) {
    if (t.numel() > o.max_numel) return Outcome::loaded;  // (a mutated shape asking for gigabytes)
    list.push_back(t);
  }
  // A rewired graph can broadcast two inputs into a huge intermediate that a reduction shrinks
  // again: legitimate, but minutes in the reference interpreter. A kernel's name carries its loop
  // sizes ("r_256_65536"); a schedule whose kernels iterate more than --max-work points is not run.
  for (const kiln::ExecItem& item : Tensor::schedule_all(list)) {
    if (item.is_copy) continue;
    double work = 1;
    size_t at = 0;
    while (at < item.name.size()) {
      size_t end = item.name.find('_', at);
      if (end == std::string::npos) end = item.name.size();
      const std::string part = item.name.substr(at, end - at);
      if (!part.empty() && part.find_first_not_of("0123456789") == std::string::npos && part.size() < 18)
        work *= static_cast<double>(std::stoll(part));
      at = end + 1;
    }
    if (work > o.max_work) return Outcome::loaded;
  }
  Tensor::realize_all(list);
  return Outcome::ran;
}

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    if (a == "--seed") o.seed = std::stoull(value());
    else if (a == "--iters") o.iters = std::stol(value());
    else if (a == "--case") o.only = std::stol(value());
    else if (a == "--device") o.device = value();
    else if (a == "--timeout") o.timeout = static_cast<unsigned>(std::stoul(value()));
    else if (a == "--max-numel") o.max_numel = std::stoll(value());
    else if (a == "--max-work") o.max_work = std::stod(value());
    else if (a == "--max-seconds") o.max_seconds = std::stod(value());
    else if (a == "--node-dir") o.node_dir = value();
    else if (a == "--verbose" || a == "-v") o.verbose = true;
    else return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  try {
    if (!parse(argc, argv, o)) {
      std::fprintf(stderr, "usage: kiln_onnx_fuzz [--seed S] [--iters N] [--case I] [--device D] [--timeout T] "
                           "[--max-numel M] [--max-work W] [--max-seconds S] [--node-dir DIR] [--verbose]\n");
      return 2;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kiln_onnx_fuzz: %s\n", e.what());
    return 2;
  }
  std::vector<Seed> seeds = built_seeds();
  const size_t built = seeds.size();
  for (auto& s : node_seeds(o.node_dir)) seeds.push_back(std::move(s));
  // external data resolves against an empty directory of our own (a mutated location must not
  // read the working directory's files)
  const fs::path base = fs::temp_directory_path() / ("kiln_onnx_fuzz_" + std::to_string(getpid()));
  fs::create_directories(base);
  signal(SIGALRM, on_alarm);
  const std::vector<std::string> ops = kiln::onnx::supported_ops();

  long counts[3] = {0, 0, 0}, done = 0;
  int failures = 0;
  const auto start = std::chrono::steady_clock::now();
  for (long i = o.only >= 0 ? o.only : 0; i < (o.only >= 0 ? o.only + 1 : o.iters); ++i) {
    if (o.max_seconds > 0 &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > o.max_seconds) {
      std::fprintf(stderr, "kiln_onnx_fuzz: --max-seconds reached after %ld cases\n", done);
      break;
    }
    std::mt19937_64 rng(o.seed * 0x9e3779b97f4a7c15ull + static_cast<uint64_t>(i));
    const Seed& seed = seeds[rng() % seeds.size()];
    std::string bytes = seed.bytes, what;
    // two cases in three change the model's fields (then maybe a byte), the rest only bytes
    if (rng() % 3) {
      ::onnx::ModelProto m;
      m.ParseFromString(bytes);
      for (int k = 1 + static_cast<int>(rng() % 3); k > 0; --k) mutate_model(m, rng, ops, what);
      bytes = m.SerializeAsString();
      if (rng() % 4 == 0) mutate(bytes, rng, what);
    } else {
      for (int k = 1 + static_cast<int>(rng() % 3); k > 0; --k) mutate(bytes, rng, what);
    }
    std::snprintf(g_case, sizeof g_case, "--seed %llu --case %ld (%s:%s)", static_cast<unsigned long long>(o.seed), i,
                  seed.name.c_str(), what.c_str());
    if (o.verbose) std::fprintf(stderr, "%s\n", g_case);
    kiln::manual_seed(static_cast<uint64_t>(i));
    alarm(o.timeout);
    try {
      counts[static_cast<int>(run_case(bytes, base.string(), o))]++;
    } catch (const kiln::Error& e) {
      counts[0]++;
      if (o.verbose) std::fprintf(stderr, "  refused: %s\n", e.what());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "kiln_onnx_fuzz: FAIL: %s threw %s (not a kiln::Error)\n", g_case, e.what());
      ++failures;
    } catch (...) {
      std::fprintf(stderr, "kiln_onnx_fuzz: FAIL: %s threw a non-std exception\n", g_case);
      ++failures;
    }
    alarm(0);
    ++done;
  }
  fs::remove_all(base);
  std::printf("kiln_onnx_fuzz: %ld cases over %zu seeds (%zu built, %zu node tests): %ld refused, %ld loaded, %ld ran; "
              "%d failures\n", done, seeds.size(), built, seeds.size() - built, counts[0], counts[1], counts[2], failures);
  return failures ? 1 : 0;
}
