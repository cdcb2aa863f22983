// ops_shape_index.cpp - ONNX operators that select or write elements by index: Gather,
// GatherElements, GatherND, Scatter, ScatterElements, ScatterND, OneHot, ReverseSequence, and
// those whose output size depends on the data (Compress, NonZero, Unique: their counts are read
// on the host, which ONNX's data-dependent shapes require). Indices may be negative (counting from
// the end of their axis) everywhere ONNX allows it; index outputs are int64, as ONNX defines.
#include <algorithm>
#include <cmath>
#include <map>

#include "ops.hpp"

namespace kiln::onnx::detail {
namespace {

using Index = Tensor::Index;

int64_t product(const Shape& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= s[i];
  return p;
}

Tensor arange64(int64_t n, const Node& node) {
  return Tensor::arange(0, static_cast<double>(n), 1, dtypes::int64, node.device());
}

// A negative index counts from the end of an axis of size `size` (a tensor broadcasting with it).
Tensor wrap_negative(const Tensor& index, const Tensor& size) {
  return Tensor::where(index.lt(scalar_like(index, 0)), index + size, index);
}

// ---- gathers ----

// numpy.take: the indices (any shape) replace the axis.
std::vector<Tensor> gather(const Node& n) {
  const Tensor& x = n.in(0);
  const int axis = n.axis(n.attr_int("axis", 0), x.ndim());
  std::vector<Index> index(axis, Index::slice());
  index.push_back(Index::tensor(n.in(1)));
  return {x.getitem(index)};
}

// numpy.take_along_axis; the indices may be smaller than the data off the axis.
std::vector<Tensor> gather_elements(const Node& n) {
  const Tensor& x = n.in(0);
  return {x.gather(n.axis(n.attr_int("axis", 0), x.ndim()), n.in(1))};
}

// The position, in the data flattened over dims [from, from + k), that each row of k indices
// (the last axis of `index`) names; negative indices count from the end of their dimension.
Tensor linear_index(const Tensor& index, const Shape& dims, size_t from, const Node& n) {
  const auto k = static_cast<int64_t>(index.shape().back());
  std::vector<int64_t> sizes(dims.begin() + static_cast<int64_t>(from), dims.begin() + static_cast<int64_t>(from) + k);
  std::vector<int64_t> strides(k, 1);
  for (int64_t j = k - 2; j >= 0; --j) strides[j] = strides[j + 1] * sizes[j + 1];
  Tensor size = Tensor::from_vector<int64_t>(sizes, {k}, n.device());
  Tensor stride = Tensor::from_vector<int64_t>(strides, {k}, n.device());
  return (wrap_negative(index.cast(dtypes::int64), size) * stride).sum({-1}).cast(dtypes::int64);
}

// GatherND: the last axis of the indices (k entries) addresses the data's dims after the first
// batch_dims (which data and indices share); the rest of the data's dims follow.
std::vector<Tensor> gather_nd(const Node& n) {
  const Tensor& x = n.in(0);
  const Tensor& idx = n.in(1);
  const auto b = static_cast<size_t>(n.attr_int("batch_dims", 0));
  const Shape& xs = x.shape();
  const Shape& is = idx.shape();
  if (is.empty()) n.fail("the indices must have rank >= 1", ErrorCode::invalid_argument);
  const auto k = static_cast<size_t>(is.back());
  if (b >= is.size() || b + k > xs.size() || k < 1)
    n.fail("indices of shape with last dimension " + std::to_string(k) + " and batch_dims " + std::to_string(b) +
               " do not fit data of rank " + std::to_string(xs.size()), ErrorCode::invalid_argument);
  for (size_t i = 0; i < b; ++i)
    if (xs[i] != is[i]) n.fail("data and indices differ in batch dimension " + std::to_string(i), ErrorCode::invalid_argument);
  const int64_t batch = product(xs, 0, b), rows = product(is, b, is.size() - 1);
  Shape flat = {batch, product(xs, b, b + k)};
  flat.insert(flat.end(), xs.begin() + static_cast<int64_t>(b + k), xs.end());
  Tensor lin = linear_index(idx.reshape({batch, rows, static_cast<int64_t>(k)}), xs, b, n);  // (batch, rows)
  Tensor which = arange64(batch, n).reshape({batch, 1}).expand({batch, rows});
  Tensor picked = x.reshape(flat).getitem({Index::tensor(which), Index::tensor(lin)});  // (batch, rows, rest...)
  Shape out(is.begin(), is.end() - 1);
  out.insert(out.end(), xs.begin() + static_cast<int64_t>(b + k), xs.end());
  return {picked.reshape(out)};
}

// ---- scatters ----

// The data with updates written (or combined by `reduction`) at the positions `index` gives along
// `axis` (the layout of numpy's put_along_axis / torch.scatter).
Tensor scatter_along(const Node& n, const Tensor& x, int axis, const Tensor& index, const Tensor& updates,
                     const std::string& reduction) {
  if (updates.dtype() != x.dtype())
    n.fail("updates are " + updates.dtype().name() + ", the data " + x.dtype().name(), ErrorCode::invalid_argument);
  if (reduction == "none") return x.scatter(axis, index, updates);
  if ((reduction == "max" || reduction == "min") && n.opset() < 18)
    n.fail("reduction '" + reduction + "' exists from opset 18", ErrorCode::invalid_argument);
  if (reduction == "add") return x.scatter_reduce(axis, index, updates, "sum");
  if (reduction == "mul") return x.scatter_reduce(axis, index, updates, "prod");
  if (reduction == "max") return x.scatter_reduce(axis, index, updates, "amax");
  if (reduction == "min") return x.scatter_reduce(axis, index, updates, "amin");
  n.fail("reduction '" + reduction + "' is not supported (none, add, mul, max, min)");
}

// ScatterElements (and the older Scatter): updates[p] goes to index[p] along the axis.
std::vector<Tensor> scatter_elements(const Node& n) {
  const Tensor& x = n.in(0);
  if (x.ndim() == 0) n.fail("the data is a scalar (0-d): it has no axis to scatter along", ErrorCode::invalid_argument);
  const int axis = n.axis(n.attr_int("axis", 0), x.ndim());
  const Tensor& index = n.in(1);
  Tensor wrapped = wrap_negative(index, scalar_like(index, x.shape()[axis]));
  return {scatter_along(n, x, axis, wrapped, n.in(2), n.attr_string("reduction", "none"))};
}

// ScatterND: each row of k indices names a slice data[i0, ..., ik-1] that the matching update
// (shaped like that slice) replaces or combines with.
std::vector<Tensor> scatter_nd(const Node& n) {
  const Tensor& x = n.in(0);
  const Tensor& idx = n.in(1);
  const Tensor& updates = n.in(2);
  const Shape& xs = x.shape();
  const Shape& is = idx.shape();
  if (is.empty()) n.fail("the indices must have rank >= 1", ErrorCode::invalid_argument);
  const auto k = static_cast<size_t>(is.back());
  if (k < 1 || k > xs.size())
    n.fail("index rows of " + std::to_string(k) + " entries do not fit data of rank " + std::to_string(xs.size()),
           ErrorCode::invalid_argument);
  Shape want(is.begin(), is.end() - 1);
  want.insert(want.end(), xs.begin() + static_cast<int64_t>(k), xs.end());
  if (updates.shape() != want) n.fail("updates do not have the shape indices.shape[:-1] + data.shape[k:]", ErrorCode::invalid_argument);
  const int64_t rows = product(is, 0, is.size() - 1), slots = product(xs, 0, k), inner = product(xs, k, xs.size());
  Tensor lin = linear_index(idx.reshape({rows, static_cast<int64_t>(k)}), xs, 0, n);  // (rows)
  Tensor where_to = lin.reshape({rows, 1}).expand({rows, inner});
  Tensor out = scatter_along(n, x.reshape({slots, inner}), 0, where_to, updates.reshape({rows, inner}),
                             n.attr_string("reduction", "none"));
  return {out.reshape(xs)};
}

// ---- one-hot, sequences ----

// OneHot: on_value where the index (negative counts from the end) matches the position along the
// new axis, off_value elsewhere (and everywhere for an index outside [-depth, depth)).
std::vector<Tensor> one_hot(const Node& n) {
  const Tensor& indices = n.in(0);
  const Tensor& values = n.in(2);
  if (values.numel() != 2) n.fail("values must hold [off_value, on_value]", ErrorCode::invalid_argument);
  const double d = n.double_scalar(1);
  if (!(d >= 1) || !std::isfinite(d)) n.fail("depth must be positive", ErrorCode::invalid_argument);
  const auto depth = static_cast<int64_t>(d);
  const int rank = indices.ndim() + 1;
  const int axis = n.axis(n.attr_int("axis", -1), rank);
  Tensor idx = indices.dtype() == dtypes::int64 ? indices : indices.cast(dtypes::int64);
  idx = wrap_negative(idx, scalar_like(idx, depth));
  Shape along(rank, 1);
  along[axis] = depth;
  Tensor hit = idx.unsqueeze(axis).eq(arange64(depth, n).reshape(along));
  Tensor flat = values.reshape({2});
  return {Tensor::where(hit, flat.getitem({Index::integer(1)}), flat.getitem({Index::integer(0)}))};
}

// ReverseSequence: in batch entry b the first lens[b] steps along the time axis are reversed, the
// rest kept: a gather along time from position lens[b] - 1 - t (t < lens[b]) or t.
std::vector<Tensor> reverse_sequence(const Node& n) {
  const Tensor& x = n.in(0);
  const int time = n.axis(n.attr_int("time_axis", 0), x.ndim()), batch = n.axis(n.attr_int("batch_axis", 1), x.ndim());
  if (x.ndim() < 2 || time == batch || time > 1 || batch > 1)
    n.fail("time_axis and batch_axis must be 0 and 1 (either way round) of an input of rank >= 2", ErrorCode::invalid_argument);
  const Tensor& lens = n.in(1);
  if (lens.ndim() != 1 || lens.shape()[0] != x.shape()[batch])
    n.fail("sequence_lens must have one entry per batch entry", ErrorCode::invalid_argument);
  Shape along_time(x.ndim(), 1), along_batch(x.ndim(), 1);
  along_time[time] = x.shape()[time];
  along_batch[batch] = x.shape()[batch];
  Tensor t = arange64(x.shape()[time], n).reshape(along_time);
  Tensor len = lens.cast(dtypes::int64).reshape(along_batch);
  Tensor from = Tensor::where(t.lt(len), len - 1 - t, t);
  return {x.gather(time, from.expand(x.shape()))};
}

// ---- data-dependent sizes ----

// Compress: the slices along the axis (the elements of the flattened input when there is none)
// whose condition is true; a condition shorter than the axis drops the rest.
std::vector<Tensor> compress(const Node& n) {
  Tensor x = n.in(0);
  if (!n.has_attr("axis")) x = x.flatten();
  if (x.ndim() == 0) n.fail("the input is a scalar (0-d): it has no axis to compress", ErrorCode::invalid_argument);
  const int axis = n.axis(n.attr_int("axis", 0), x.ndim());
  const Tensor& cond = n.in(1);
  if (cond.ndim() != 1) n.fail("the condition must be 1-d", ErrorCode::invalid_argument);
  if (cond.numel() > x.shape()[axis])
    n.fail("the condition has " + std::to_string(cond.numel()) + " entries, the axis " + std::to_string(x.shape()[axis]),
           ErrorCode::invalid_argument);
  std::vector<int64_t> keep;
  const auto flags = n.ints(1);
  for (size_t i = 0; i < flags.size(); ++i)
    if (flags[i]) keep.push_back(static_cast<int64_t>(i));
  std::vector<Index> index(axis, Index::slice());
  if (keep.empty()) index.push_back(Index::slice(0, 0));
  else index.push_back(Index::tensor(Tensor::from_vector<int64_t>(keep, {static_cast<int64_t>(keep.size())}, n.device())));
  return {x.getitem(index)};
}

// NonZero: int64 (rank, count), the coordinates of the non-zero elements column by column.
std::vector<Tensor> non_zero(const Node& n) {
  Tensor x = n.in(0);
  if (x.ndim() == 0) x = x.reshape({1});  // numpy treats a scalar as 1-d
  return {x.nonzero().cast(dtypes::int64).transpose(0, 1)};
}

// The unique rows of a (rows, width) host array: their first positions (in the order of first
// occurrence, or sorted lexicographically), each row's unique and the counts.
struct Uniques {
  std::vector<int64_t> first, inverse, counts;
};

template <typename T>
Uniques find_uniques(const std::vector<T>& data, int64_t rows, int64_t width, bool sorted, const Node& n) {
  if constexpr (std::is_floating_point_v<T>)
    for (T v : data)
      if (std::isnan(v)) n.fail("NaN values are not supported (their equality is ill-defined)");
  std::map<std::vector<T>, int64_t> seen;  // row -> its unique's number in order of first occurrence
  Uniques u;
  std::vector<int64_t> id(rows);
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<T> row(data.begin() + r * width, data.begin() + (r + 1) * width);
    auto [it, fresh] = seen.emplace(std::move(row), static_cast<int64_t>(u.first.size()));
    if (fresh) u.first.push_back(r), u.counts.push_back(0);
    ++u.counts[it->second];
    id[r] = it->second;
  }
  std::vector<int64_t> rank(u.first.size());  // position of each unique in the output
  for (size_t i = 0; i < rank.size(); ++i) rank[i] = static_cast<int64_t>(i);
  if (sorted) {
    int64_t at = 0;
    std::vector<int64_t> first(u.first.size()), counts(u.first.size());
    for (const auto& [row, number] : seen) {  // std::map iterates in lexicographic order
      rank[number] = at;
      first[at] = u.first[number], counts[at] = u.counts[number];
      ++at;
    }
    u.first = std::move(first), u.counts = std::move(counts);
  }
  for (int64_t r = 0; r < rows; ++r) u.inverse.push_back(rank[id[r]]);
  return u;
}

// Unique (numpy.unique): the unique elements of the flattened input, or the unique slices along
// the axis; the values are read on the host, the result picked from the input on the device.
std::vector<Tensor> unique(const Node& n) {
  const Tensor& x = n.in(0);
  const bool sorted = n.attr_int("sorted", 1) != 0;
  std::vector<int> order;  // the axis first, then the others
  Tensor rows = x.flatten().reshape({x.numel(), 1});
  if (n.has_attr("axis")) {
    if (x.ndim() == 0) n.fail("the input is a scalar (0-d): it has no axis", ErrorCode::invalid_argument);
    const int axis = n.axis(n.attr_int("axis", 0), x.ndim());
    order.push_back(axis);
    for (int i = 0; i < x.ndim(); ++i)
      if (i != axis) order.push_back(i);
    const int64_t count = x.shape()[axis];
    rows = x.permute(order).reshape({count, count ? x.numel() / count : 0});
  }
  const int64_t count = rows.shape()[0], width = rows.shape()[1];
  Uniques u;
  const DType dt = x.dtype();
  if (dt.is_float()) u = find_uniques(rows.cast(dtypes::float64).to_vector<double>(), count, width, sorted, n);
  else if (dt.is_unsigned()) u = find_uniques(rows.cast(dtypes::uint64).to_vector<uint64_t>(), count, width, sorted, n);
  else u = find_uniques(rows.cast(dtypes::int64).to_vector<int64_t>(), count, width, sorted, n);
  const auto found = static_cast<int64_t>(u.first.size());
  Tensor first = Tensor::from_vector<int64_t>(u.first, {found}, n.device());
  Tensor y = found ? rows.getitem({Index::tensor(first)}) : rows.getitem({Index::slice(0, 0)});  // (found, width)
  if (order.empty()) {
    y = y.reshape({found});
  } else {
    Shape moved = {found};
    for (size_t i = 1; i < order.size(); ++i) moved.push_back(x.shape()[order[i]]);
    std::vector<int> back(order.size());
    for (size_t i = 0; i < order.size(); ++i) back[order[i]] = static_cast<int>(i);
    y = y.reshape(moved).permute(back);
  }
  return {y, first, Tensor::from_vector<int64_t>(u.inverse, {count}, n.device()),
          Tensor::from_vector<int64_t>(u.counts, {found}, n.device())};
}

}  // namespace

void shape_index_ops(std::vector<OpDef>& out) {
  out.insert(out.end(), {
      {"Gather", 1, {"axis"}, gather},
      {"GatherElements", 11, {"axis"}, gather_elements},
      {"GatherND", 11, {"batch_dims"}, gather_nd},
      {"Scatter", 9, {"axis"}, scatter_elements},
      {"ScatterElements", 11, {"axis", "reduction"}, scatter_elements},
      {"ScatterND", 11, {"reduction"}, scatter_nd},
      {"OneHot", 9, {"axis"}, one_hot},
      {"ReverseSequence", 10, {"batch_axis", "time_axis"}, reverse_sequence},
      {"Compress", 9, {"axis"}, compress},
      {"NonZero", 9, {}, non_zero},
      {"Unique", 11, {"axis", "sorted"}, unique},
  });
}

}  // namespace kiln::onnx::detail
