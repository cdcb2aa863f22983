// tensor_proto.cpp - reading ONNX tensors: the typed repeated fields, raw_data (little-endian, as
// the format defines it and as this host stores), and external data files beside the model.
#include "tensor_proto.hpp"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string_view>
#include <filesystem>
#include <fstream>

#include "kiln/onnx.hpp"

namespace kiln::onnx::detail {
namespace {
using ::onnx::TensorProto;

// More elements than any memory holds (2^59: 4 EiB of float64) is a corrupt shape, not a tensor;
// refusing it keeps every byte count below int64's range (a zero-size dim multiplies the rest away,
// so each dim is checked too).
constexpr int64_t kMaxElements = int64_t{1} << 59;

[[noreturn]] void fail(const std::string& what, const std::string& msg, ErrorCode code = ErrorCode::data_loss) {
  throw Error(code, what + ": " + msg);
}

// An external-data offset or length: a non-negative decimal number (the file is untrusted).
int64_t external_number(const std::string& key, const std::string& value, const std::string& what) {
  int64_t v = 0;
  bool ok = !value.empty() && value.size() <= 18;  // (no overflow below)
  for (char c : value) {
    ok = ok && c >= '0' && c <= '9';
    if (ok) v = v * 10 + (c - '0');
  }
  if (!ok) fail(what, "external data " + key + " '" + value + "' is not a number (a corrupt model?)");
  return v;
}

// The bytes of an external-data tensor: `location` relative to base_dir, optional offset/length.
// The file must hold `nbytes` (the tensor's size) where it says: checked before anything is read.
std::string read_external(const TensorProto& p, const std::string& base_dir, const std::string& what, uint64_t nbytes) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : p.external_data()) {
    if (kv.key() == "location") location = kv.value();
    else if (kv.key() == "offset") offset = external_number("offset", kv.value(), what);
    else if (kv.key() == "length") length = external_number("length", kv.value(), what);
  }
  if (location.empty()) fail(what, "external data without a 'location' entry (a corrupt model?)");
  // A model names files beside it, never elsewhere: no absolute path, no '..' component (a model
  // from the internet must not read the user's other files).
  std::filesystem::path path = std::filesystem::path(location);
  bool escapes = path.is_absolute() || path.has_root_name() || location.find('\0') != std::string::npos;
  for (const auto& part : path) escapes = escapes || part == "..";
  if (escapes)
    fail(what, "external data location '" + location + "' must be a relative path inside the model's directory",
         ErrorCode::invalid_argument);
  path = std::filesystem::path(base_dir.empty() ? "." : base_dir) / path;
  std::ifstream f(path, std::ios::binary);
  if (!f)
    fail(what, "external data file '" + path.string() + "' is missing (keep it beside the model, as exported)",
         ErrorCode::not_found);
  f.seekg(0, std::ios::end);
  const int64_t size = static_cast<int64_t>(f.tellg());
  if (size < 0 || offset > size || (length >= 0 && length > size - offset))
    fail(what, "external data '" + path.string() + "' is " + std::to_string(size) + " bytes, the tensor wants " +
                   std::to_string(length) + " at offset " + std::to_string(offset));
  if (length < 0) length = size - offset;
  if (static_cast<uint64_t>(length) != nbytes)
    fail(what, "external data '" + path.string() + "' gives " + std::to_string(length) + " bytes at offset " +
                   std::to_string(offset) + ", the tensor's shape and type need " + std::to_string(nbytes) +
                   " (a truncated data file, or one of another export?)");
  std::string bytes(static_cast<size_t>(length), '\0');
  f.seekg(offset);
  f.read(bytes.data(), length);
  return bytes;
}

// Elements of a typed repeated field narrowed to the dtype's storage.
template <typename Dst, typename Field>
std::string pack(const Field& field) {
  std::string out(field.size() * sizeof(Dst), '\0');
  for (int i = 0; i < field.size(); ++i) {
    Dst v = static_cast<Dst>(field.Get(i));
    std::memcpy(out.data() + i * sizeof(Dst), &v, sizeof(Dst));
  }
  return out;
}
}  // namespace

std::optional<DType> dtype_of(int32_t t) {
  switch (t) {
    case TensorProto::FLOAT: return dtypes::float32;
    case TensorProto::UINT8: return dtypes::uint8;
    case TensorProto::INT8: return dtypes::int8;
    case TensorProto::UINT16: return dtypes::uint16;
    case TensorProto::INT16: return dtypes::int16;
    case TensorProto::INT32: return dtypes::int32;
    case TensorProto::INT64: return dtypes::int64;
    case TensorProto::BOOL: return dtypes::bool_;
    case TensorProto::FLOAT16: return dtypes::float16;
    case TensorProto::DOUBLE: return dtypes::float64;
    case TensorProto::UINT32: return dtypes::uint32;
    case TensorProto::UINT64: return dtypes::uint64;
    case TensorProto::BFLOAT16: return dtypes::bfloat16;
    default: return std::nullopt;
  }
}

const char* onnx_type_name(int32_t t) {
  if (TensorProto::DataType_IsValid(t)) {
    static thread_local std::string name;
    name = TensorProto::DataType_Name(static_cast<TensorProto::DataType>(t));
    return name.c_str();
  }
  static thread_local std::string unknown;
  unknown = std::to_string(t) + " (not an ONNX type: a corrupt model?)";
  return unknown.c_str();
}

int32_t onnx_type_of(DType d) {
  switch (d.scalar()) {
    case Scalar::float32: return TensorProto::FLOAT;
    case Scalar::uint8: return TensorProto::UINT8;
    case Scalar::int8: return TensorProto::INT8;
    case Scalar::uint16: return TensorProto::UINT16;
    case Scalar::int16: return TensorProto::INT16;
    case Scalar::int32: return TensorProto::INT32;
    case Scalar::int64: return TensorProto::INT64;
    case Scalar::bool_: return TensorProto::BOOL;
    case Scalar::float16: return TensorProto::FLOAT16;
    case Scalar::float64: return TensorProto::DOUBLE;
    case Scalar::uint32: return TensorProto::UINT32;
    case Scalar::uint64: return TensorProto::UINT64;
    case Scalar::bfloat16: return TensorProto::BFLOAT16;
    case Scalar::void_:
    case Scalar::index: break;
  }
  return TensorProto::UNDEFINED;
}

bool read_file(const std::string& path, std::string& out) {
  // One read of the whole file: an istreambuf_iterator goes a character at a time (a 45 MB
  // model took about 0.1 s to read that way).
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f) return false;
  const std::streamsize size = f.tellg();
  if (size < 0) return false;
  out.resize(static_cast<size_t>(size));
  f.seekg(0);
  return static_cast<bool>(f.read(out.data(), size));
}

namespace {

// rows x cols elements of `size` bytes each, transposed into cols x rows: blocks of 16 x 16, each
// written a destination row at a time (9.4 MB in 1 ms here; element-wise copies compile to moves).
template <typename T>
void transpose_as(const char* src, char* dst, int64_t rows, int64_t cols) {
  constexpr int64_t B = 16, size = sizeof(T);
  for (int64_t r0 = 0; r0 < rows; r0 += B)
    for (int64_t c0 = 0; c0 < cols; c0 += B) {
      const int64_t r1 = std::min(rows, r0 + B), c1 = std::min(cols, c0 + B);
      for (int64_t c = c0; c < c1; ++c)
        for (int64_t r = r0; r < r1; ++r) std::memcpy(dst + (c * rows + r) * size, src + (r * cols + c) * size, size);
    }
}

void transpose_into(std::string_view data, char* out, int64_t rows, int64_t cols, size_t size) {
  switch (size) {
    case 1: transpose_as<uint8_t>(data.data(), out, rows, cols); break;
    case 2: transpose_as<uint16_t>(data.data(), out, rows, cols); break;
    case 4: transpose_as<uint32_t>(data.data(), out, rows, cols); break;
    default: transpose_as<uint64_t>(data.data(), out, rows, cols); break;
  }
}

// A flat realized tensor of `numel` elements that `fill` writes, in memory of the loader's own,
// handed to the device without a copy where its buffers are host memory (cpu: Tensor::from_blob;
// elsewhere from_blob copies it once). Why not the device's allocator: it maps huge pages for
// large buffers, and where free memory is fragmented, or a VM hands freed pages back to its host,
// each first touch of a 2 MiB page waits for one to be assembled (2-3 ms a page measured here:
// ResNet-18's 45 MB of weights took ~110 ms of a 160-240 ms load). Weights are written once, here,
// and only read after; in 4 KiB pages the same bytes cost 15 ms.
template <typename Fill>
Tensor host_tensor(uint64_t nbytes, DType dt, int64_t numel, const std::string& device, const std::string& what,
                   Fill fill) {
  const uint64_t rounded = std::max<uint64_t>(64, (nbytes + 63) / 64 * 64);
  std::shared_ptr<void> mem(std::aligned_alloc(64, rounded), std::free);
  if (!mem) fail(what, "cannot allocate " + std::to_string(nbytes) + " bytes of host memory", ErrorCode::resource_exhausted);
  fill(static_cast<char*>(mem.get()));
  Tensor flat = Tensor::from_blob(mem.get(), dt, {numel}, mem, device);
  flat.realize();
  return flat;
}

}  // namespace

std::vector<int> layout_view(Layout layout, int64_t ndim) {
  std::vector<int> order(static_cast<size_t>(ndim));
  for (int i = 0; i < int(ndim); ++i) order[size_t(i)] = i;
  if (layout == Layout::out_channels_last && ndim >= 2) std::rotate(order.rbegin(), order.rbegin() + 1, order.rend());
  return order;  // out_channels_last: (n-1, 0, 1, ..., n-2)
}

std::vector<int> layout_storage(Layout layout, int64_t ndim) {
  std::vector<int> order(static_cast<size_t>(ndim));
  for (int i = 0; i < int(ndim); ++i) order[size_t(i)] = i;
  if (layout == Layout::out_channels_last && ndim >= 2) std::rotate(order.begin(), order.begin() + 1, order.end());
  return order;  // out_channels_last: (1, 2, ..., n-1, 0)
}

Tensor tensor_from_proto(const TensorProto& p, const std::string& base_dir, const std::string& what,
                         const std::string& device, Layout layout) {
  const auto dt = dtype_of(p.data_type());
  if (!dt)
    fail(what, std::string("element type ") + onnx_type_name(p.data_type()) + " is not supported by kiln",
         ErrorCode::unimplemented);
  Shape shape(p.dims().begin(), p.dims().end());
  int64_t numel = 1;
  std::string dims;
  for (int64_t d : shape) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
  for (int64_t d : shape) {
    if (d < 0) fail(what, "negative dimension " + std::to_string(d) + " in its shape (" + dims + ")");
    if (d > kMaxElements || __builtin_mul_overflow(numel, d, &numel) || numel > kMaxElements)
      fail(what, "its shape (" + dims + ") has too many elements (a corrupt model?)");
  }
  const uint64_t nbytes = static_cast<uint64_t>(numel) * dt->itemsize();
  std::string bytes;
  const bool raw = p.data_location() != TensorProto::EXTERNAL && p.has_raw_data() && !dt->is_bool();
  if (p.data_location() == TensorProto::EXTERNAL) {
    bytes = read_external(p, base_dir, what, nbytes);
  } else if (p.has_raw_data()) {
    if (!raw) bytes = p.raw_data();  // bools are normalised below; other raw data is read in place
  } else {
    switch (p.data_type()) {
      case TensorProto::FLOAT: bytes = pack<float>(p.float_data()); break;
      case TensorProto::DOUBLE: bytes = pack<double>(p.double_data()); break;
      case TensorProto::INT64: bytes = pack<int64_t>(p.int64_data()); break;
      case TensorProto::UINT32: bytes = pack<uint32_t>(p.uint64_data()); break;
      case TensorProto::UINT64: bytes = pack<uint64_t>(p.uint64_data()); break;
      case TensorProto::INT32: bytes = pack<int32_t>(p.int32_data()); break;
      case TensorProto::INT16: bytes = pack<int16_t>(p.int32_data()); break;
      case TensorProto::INT8: bytes = pack<int8_t>(p.int32_data()); break;
      case TensorProto::UINT16:
      case TensorProto::FLOAT16:
      case TensorProto::BFLOAT16: bytes = pack<uint16_t>(p.int32_data()); break;
      case TensorProto::UINT8: bytes = pack<uint8_t>(p.int32_data()); break;
      case TensorProto::BOOL: bytes = pack<uint8_t>(p.int32_data()); break;
      default: break;
    }
  }
  const std::string_view data = raw ? std::string_view(p.raw_data()) : std::string_view(bytes);
  if (data.size() != nbytes)
    fail(what, "holds " + std::to_string(data.size()) + " bytes of data, its shape (" + dims + ") and " + dt->name() +
                   " need " + std::to_string(nbytes) + " (a truncated or corrupt tensor)");
  if (dt->is_bool())
    for (char& c : bytes) c = c != 0;
  // The elements copied to the device as one flat buffer, realized, then viewed in their shape: a
  // kernel indexes the view directly, while realizing the shaped tensor itself would run an
  // elementwise copy kernel (compiled once per distinct shape: a model's load compiled one per
  // weight shape, about a fifth of its first call).
  if (layout == Layout::out_channels_last && shape.size() >= 2 && numel > 0) {
    Tensor flat = host_tensor(nbytes, *dt, numel, device, what, [&](char* out) {
      transpose_into(data, out, shape[0], numel / shape[0], dt->itemsize());
    });
    Shape stored = shape;
    std::rotate(stored.begin(), stored.begin() + 1, stored.end());
    return flat.reshape(stored).permute(layout_view(layout, int64_t(shape.size())));
  }
  if (numel == 0) return Tensor::from_bytes(data.data(), nbytes, *dt, shape, device).realize();
  return host_tensor(nbytes, *dt, numel, device, what, [&](char* out) { std::memcpy(out, data.data(), nbytes); })
      .reshape(shape);
}

}  // namespace kiln::onnx::detail

namespace kiln::onnx {

Tensor tensor_from_bytes(std::string_view bytes, const std::string& what, const std::string& device) {
  ::onnx::TensorProto p;
  if (bytes.size() > static_cast<size_t>(INT32_MAX) || !p.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    throw Error(ErrorCode::data_loss, what + ": not an ONNX TensorProto (the file does not parse)");
  return detail::tensor_from_proto(p, "", what, device);
}

Tensor load_tensor(const std::string& path, const std::string& device) {
  std::string bytes;
  if (!detail::read_file(path, bytes)) throw Error(ErrorCode::not_found, path + ": cannot open the tensor file");
  return tensor_from_bytes(bytes, path, device);
}

}  // namespace kiln::onnx
