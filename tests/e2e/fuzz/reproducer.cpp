// tests/e2e/fuzz/reproducer.cpp - a fuzz program printed as C++ against kiln's public API: the
// exact calls each step makes (as run_modes.cpp's kiln_eval makes them) and the inputs as literals,
// so that a failure can be pasted into a test (tests/e2e/wrong_answers_test.cpp holds what the
// fuzzer found). The modes add their own lines around the steps (the realizes, the Jit, the loss).
#include <algorithm>
#include <sstream>

#include "program.hpp"

namespace kiln::fuzz {
namespace {

const char* kUnaryName[] = {"neg", "relu", "abs", "tanh", "sigmoid", "exp", "square", "logical_not"};
const char* kBinaryName[] = {"+", "-", "*", "maximum", "minimum", "&", "|", "^"};
const char* kCmpName[] = {"lt", "gt", "eq", "ne"};
const char* kReduceName[] = {"sum", "max", "min", "mean"};

std::string num(double x) {
  std::ostringstream o;
  o.precision(17);
  o << x;
  std::string s = o.str();
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

std::string ints_text(const std::vector<int64_t>& v) {
  std::string t = "{";
  for (size_t i = 0; i < v.size(); ++i) t += (i ? ", " : "") + std::to_string(v[i]);
  return t + "}";
}

std::string devices_text(const std::vector<std::string>& devs) {
  std::string t = "{";
  for (size_t i = 0; i < devs.size(); ++i) t += (i ? ", \"" : "\"") + devs[i] + "\"";
  return t + "}";
}

}  // namespace

// The expression make_input evaluates, with the values as literals.
std::string input_text(const Node& n, const std::vector<double>& v, const Placement& at) {
  const DType d = run_dtype(n.dtype, at);
  std::ostringstream o;
  const char* type = d.is_bool() ? "bool" : d == dtypes::int8 ? "int8_t" : d == dtypes::uint8 ? "uint8_t" : d == dtypes::int32 ? "int32_t"
                     : d == dtypes::uint32 ? "uint32_t" : "double";
  o << "Tensor::from_vector<" << type << ">({";
  for (size_t k = 0; k < v.size(); ++k) {
    o << (k ? ", " : "");
    if (d.is_bool()) o << (v[k] != 0 ? "true" : "false");
    else if (d.is_int()) o << static_cast<int64_t>(v[k]);
    else o << num(v[k]);
  }
  o << "}, " << ints_text(n.shape) << ", \"" << at.device << "\")";
  if (d.is_float()) o << ".cast(" << cpp_dtype(d) << ")";
  o << ".realize()";
  if (!at.shard_over.empty()) {
    o << ".shard(" << devices_text(at.shard_over);
    if (n.shard >= 0) o << ", " << n.shard;
    o << ").realize()";
  }
  return o.str();
}

// The steps as statements; `input(i, k)` is the expression of Input step i (the k-th input).
std::string steps_text(const Program& p, const Placement& at, const std::function<std::string(int, int)>& input, const std::string& indent) {
  std::ostringstream o;
  int k = 0;
  const std::vector<int> cmp = compared(p);
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    const Node& n = p.nodes[i];
    std::string A = "t" + std::to_string(n.a), B = "t" + std::to_string(n.b), C = "t" + std::to_string(n.c);
    std::string pairs;
    for (size_t q = 0; q + 1 < n.ints.size(); q += 2)
      pairs += (q ? ", " : "") + std::string("{") + std::to_string(n.ints[q]) + ", " + std::to_string(n.ints[q + 1]) + "}";
    const bool integer = n.dtype.is_int();
    o << indent;
    if (n.k == K::Assign) {
      o << A << ".assign(" << B << ");\n" << indent;
    }
    o << "Tensor t" << i << " = ";
    switch (n.k) {
      case K::Input: o << input(static_cast<int>(i), k++); break;
      case K::Unary:
        if (n.sub == kNeg) o << "-" << A;
        else if (n.sub == kExp) o << "(" << A << " * 0.25).exp()";
        else if (n.sub == kSquare) o << A << " * " << A;
        else o << A << "." << kUnaryName[n.sub] << "()";
        break;
      case K::Binary:
        if (n.sub == kMax || n.sub == kMin) o << A << "." << kBinaryName[n.sub] << "(" << B << ")";
        else o << A << " " << kBinaryName[n.sub] << " " << B;
        break;
      case K::Scalar:
        o << A << (n.sub == 0 ? " * " : " + ");
        if (integer) o << static_cast<int64_t>(n.s);
        else o << num(n.s);
        break;
      case K::Compare: o << A << "." << kCmpName[n.sub] << "(" << B << ")"; break;
      case K::Where:
        if (n.sub == 1) o << "Tensor::where(" << A << ", " << B << ", " << C << ")";
        else o << "Tensor::where(" << A << ".gt(" << B << "), " << A << ", " << C << ")";
        break;
      case K::Cast: o << A << ".cast(" << cpp_dtype(run_dtype(n.dtype, at)) << ")"; break;
      case K::Reshape: o << A << ".reshape(" << ints_text(n.ints) << ")"; break;
      case K::Permute: o << A << ".permute(" << ints_text(n.ints) << ")"; break;
      case K::Pad: o << A << ".pad({" << pairs << "})"; break;
      case K::Shrink: o << A << ".shrink({" << pairs << "})"; break;
      case K::Flip: o << A << ".flip(" << ints_text(n.ints) << ")"; break;
      case K::Expand: o << A << ".expand(" << ints_text(n.ints) << ")"; break;
      case K::Reduce: o << A << "." << kReduceName[n.sub] << "({" << n.axis << "}, " << (n.keep ? "true" : "false") << ")"; break;
      case K::Softmax: o << A << (n.sub ? ".log_softmax(" : ".softmax(") << n.axis << ")"; break;
      case K::Var: o << A << (n.sub ? ".std({" : ".var({") << n.axis << "}, " << (n.keep ? "true" : "false") << ")"; break;
      case K::Matmul: o << A << ".matmul(" << B << ")"; break;
      case K::Assign: o << A; break;
      case K::Clone: o << A << ".clone()"; break;
    }
    o << ";  // " << ints_text(n.shape) << " " << run_dtype(n.dtype, at).name();
    if (std::find(cmp.begin(), cmp.end(), static_cast<int>(i)) == cmp.end()) o << " (not read: a later assign writes what it reads)";
    o << "\n";
  }
  return o.str();
}

}  // namespace kiln::fuzz
