// tensor/einsum.cpp - torch.einsum as movement ops, one broadcast product and one sum.
//
// Each operand's repeated labels are first reduced to their diagonal (Tensor::diagonal), so every
// operand names each of its axes once. Then every operand is permuted into one global label order
// (the output's labels, then the summed ones) with size-1 axes for the labels it lacks, the
// operands are multiplied with broadcasting, and the summed labels (the trailing axes) are reduced.
// The product holds every label at once (its size is the product of all label sizes), which is
// what the graph fuses into the reduce; a chain of pairwise contractions would be smaller for
// long chains of large operands, and is not needed by the forms einsum is used for here. Half
// types compute the product and the sum in float32 and round once.
#include <algorithm>
#include <map>
#include <numeric>

#include "tensor/tensor_state.hpp"

namespace kiln {

using namespace detail;

namespace {

// Label ids: letters are their char codes; the k-th of E ellipsis dimensions is kEllipsis + k.
constexpr int kEllipsis = 1000;

struct Term {
  std::vector<int> letters;  // in order, with -1 where "..." stands
  bool has_ellipsis = false;
};

Term parse_term(const std::string& s, const std::string& formula) {
  Term t;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '.') {
      if (s.compare(i, 3, "...") != 0)
        fail(ErrorCode::invalid_argument, "einsum: '.' must be part of an ellipsis '...' in '", formula, "'");
      if (t.has_ellipsis)
        fail(ErrorCode::invalid_argument, "einsum: more than one ellipsis in the subscript '", s, "' of '", formula, "'");
      t.has_ellipsis = true;
      t.letters.push_back(-1);
      i += 2;
    } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
      t.letters.push_back(c);
    } else {
      fail(ErrorCode::invalid_argument, "einsum: invalid character '", std::string(1, c), "' in '", formula,
           "' (subscripts are letters a-z, A-Z and '...')");
    }
  }
  return t;
}

std::string label_name(int l) { return l >= kEllipsis ? "... dimension " + std::to_string(l - kEllipsis) : std::string(1, static_cast<char>(l)); }

}  // namespace

Tensor Tensor::einsum(const std::string& formula_in, const std::vector<Tensor>& operands) {
  std::string formula;
  for (char c : formula_in)
    if (c != ' ') formula += c;
  const size_t arrow = formula.find("->");
  const std::string lhs = formula.substr(0, arrow);
  std::vector<Term> terms;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    terms.push_back(parse_term(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start), formula_in));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != operands.size())
    fail(ErrorCode::invalid_argument, "einsum: '", formula_in, "' has ", terms.size(), " operand subscripts but ", operands.size(),
         " operands were given");
  if (operands.empty()) fail(ErrorCode::invalid_argument, "einsum: needs at least one operand");

  // the ellipsis dimensions of each operand, right-aligned against the longest
  size_t ell = 0;
  std::vector<size_t> ell_of(terms.size(), 0);
  for (size_t k = 0; k < terms.size(); ++k) {
    const size_t named = terms[k].letters.size() - (terms[k].has_ellipsis ? 1 : 0);
    const size_t nd = static_cast<size_t>(operands[k].ndim());
    if (terms[k].has_ellipsis ? named > nd : named != nd)
      fail(ErrorCode::invalid_argument, "einsum: operand ", k, " of shape ", shape_str(operands[k].shape()), " has ", nd,
           " dimensions, but its subscript in '", formula_in, "' names ", named, terms[k].has_ellipsis ? " (and '...')" : "");
    ell_of[k] = terms[k].has_ellipsis ? nd - named : 0;
    ell = std::max(ell, ell_of[k]);
  }

  // each operand with one axis per label (diagonals taken for repeated labels), and the label sizes
  std::vector<Tensor> xs;
  std::vector<std::vector<int>> labels(terms.size());
  std::map<int, int64_t> size;
  std::map<int, int> uses;  // in how many places a letter appears (for the implicit output)
  for (size_t k = 0; k < terms.size(); ++k) {
    std::vector<int>& ls = labels[k];
    for (int l : terms[k].letters) {
      if (l == -1) {
        for (size_t e = ell - ell_of[k]; e < ell; ++e) ls.push_back(kEllipsis + static_cast<int>(e));
      } else {
        ls.push_back(l);
        uses[l]++;
      }
    }
    Tensor x = operands[k];
    for (bool again = true; again;) {
      again = false;
      for (size_t a = 0; a < ls.size() && !again; ++a)
        for (size_t b = a + 1; b < ls.size() && !again; ++b) {
          if (ls[a] != ls[b]) continue;
          if (x.shape()[a] != x.shape()[b])
            fail(ErrorCode::invalid_argument, "einsum: label '", label_name(ls[a]), "' repeats in operand ", k, " of shape ",
                 shape_str(x.shape()), " over dimensions of sizes ", x.shape()[a], " and ", x.shape()[b], " in '", formula_in, "'");
          x = x.diagonal(0, static_cast<int>(a), static_cast<int>(b));  // the diagonal becomes the last axis
          int l = ls[a];
          ls.erase(ls.begin() + static_cast<std::ptrdiff_t>(b));
          ls.erase(ls.begin() + static_cast<std::ptrdiff_t>(a));
          ls.push_back(l);
          again = true;
        }
    }
    for (size_t a = 0; a < ls.size(); ++a) {
      int64_t n = x.shape()[a];
      auto it = size.find(ls[a]);
      if (it == size.end() || it->second == 1) {
        if (it == size.end() || n != 1) size[ls[a]] = n;
      } else if (n != 1 && n != it->second) {
        fail(ErrorCode::invalid_argument, "einsum: label '", label_name(ls[a]), "' has size ", it->second,
             " in one operand but ", n, " in operand ", k, " of shape ", shape_str(operands[k].shape()), " in '", formula_in,
             "' (sizes must match or be 1)");
      }
    }
    xs.push_back(x);
  }

  // the output labels: as written after "->", or the ellipsis then the letters used once, sorted
  std::vector<int> out;
  if (arrow != std::string::npos) {
    Term rhs = parse_term(formula.substr(arrow + 2), formula_in);
    for (int l : rhs.letters) {
      if (l == -1) {
        for (size_t e = 0; e < ell; ++e) out.push_back(kEllipsis + static_cast<int>(e));
        continue;
      }
      if (!uses.count(l))
        fail(ErrorCode::invalid_argument, "einsum: output label '", label_name(l), "' of '", formula_in, "' is in no operand");
      if (std::find(out.begin(), out.end(), l) != out.end())
        fail(ErrorCode::invalid_argument, "einsum: output label '", label_name(l), "' appears twice in '", formula_in, "'");
      out.push_back(l);
    }
  } else {
    for (size_t e = 0; e < ell; ++e) out.push_back(kEllipsis + static_cast<int>(e));
    for (const auto& [l, n] : uses)  // std::map: ascending char codes, upper case first (torch)
      if (n == 1) out.push_back(l);
  }
  std::vector<int> all = out;
  for (const auto& [l, n] : size)
    if (std::find(all.begin(), all.end(), l) == all.end()) all.push_back(l);

  // every operand in the global order, size 1 where it lacks a label; the product; the sum.
  // float16/bfloat16 multiply and sum in float32 and round once, as matmul does (a product of two
  // half values is exact in float32): rounding each product first rounded twice.
  DType dt = xs[0].dtype();
  for (const Tensor& x : xs) dt = least_upper_dtype(dt, x.dtype());
  const bool half = is_half_float(dt);
  std::optional<Tensor> prod;
  for (size_t k = 0; k < xs.size(); ++k) {
    std::vector<int> order;
    Shape target;
    for (int l : all) {
      auto it = std::find(labels[k].begin(), labels[k].end(), l);
      if (it == labels[k].end()) {
        target.push_back(1);
      } else {
        order.push_back(static_cast<int>(it - labels[k].begin()));
        target.push_back(xs[k].shape()[order.back()]);
      }
    }
    Tensor t = xs[k].permute(order).reshape(target);
    if (half) t = t.cast(dt).cast(dtypes::float32);  // (an int16 operand: the half value `*` would use)
    prod = prod ? *prod * t : t;
  }
  Shape full;
  for (int l : all) full.push_back(size[l]);
  Tensor r = prod->expand(full);  // a label whose every operand had size 1 (or one operand) keeps its size
  if (all.size() != out.size()) {
    std::vector<int> summed(all.size() - out.size());
    std::iota(summed.begin(), summed.end(), static_cast<int>(out.size()));
    r = r.sum(summed);
  }
  return half ? r.cast(dt) : r;
}

}  // namespace kiln
