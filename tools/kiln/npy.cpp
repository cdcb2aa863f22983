// tools/kiln/npy.cpp - the .npy format: "\x93NUMPY", a version (1.0: 2-byte header length; 2.0 and
// 3.0: 4-byte), then a Python dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// padded with spaces, then the raw elements.
#include "npy.hpp"

#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>

namespace kiln::cli {
namespace {

[[noreturn]] void fail(const std::string& what, const std::string& msg, ErrorCode code = ErrorCode::data_loss) {
  throw Error(code, what + ": " + msg);
}

// The value of `key` in the header dict, as written (a quoted string, True/False, a tuple).
std::string field(const std::string& header, const std::string& key, const std::string& what) {
  size_t at = header.find("'" + key + "'");
  if (at == std::string::npos) fail(what, "the .npy header has no '" + key + "' entry");
  at = header.find(':', at);
  if (at == std::string::npos) fail(what, "the .npy header is malformed");
  ++at;
  while (at < header.size() && header[at] == ' ') ++at;
  size_t end = at;
  if (at < header.size() && (header[at] == '\'' || header[at] == '"')) {
    end = header.find(header[at], at + 1);
    if (end == std::string::npos) fail(what, "the .npy header is malformed");
    return header.substr(at + 1, end - at - 1);
  }
  if (at < header.size() && header[at] == '(') {
    end = header.find(')', at);
    if (end == std::string::npos) fail(what, "the .npy header is malformed");
    return header.substr(at, end - at + 1);
  }
  while (end < header.size() && header[end] != ',' && header[end] != '}') ++end;
  return header.substr(at, end - at);
}

std::optional<DType> dtype_of(const std::string& code) {  // "f4", "i8", "b1", ...
  static const std::pair<const char*, DType> kTable[] = {
      {"b1", dtypes::bool_},   {"i1", dtypes::int8},    {"i2", dtypes::int16},    {"i4", dtypes::int32},
      {"i8", dtypes::int64},   {"u1", dtypes::uint8},   {"u2", dtypes::uint16},   {"u4", dtypes::uint32},
      {"u8", dtypes::uint64},  {"f2", dtypes::float16}, {"f4", dtypes::float32},  {"f8", dtypes::float64}};
  for (const auto& [c, d] : kTable)
    if (code == c) return d;
  return std::nullopt;
}

}  // namespace

Tensor parse_npy(std::string_view bytes, const std::string& what, const std::string& device) {
  if (bytes.size() < 10 || std::memcmp(bytes.data(), "\x93NUMPY", 6) != 0)
    fail(what, "not a .npy file (no \\x93NUMPY magic; save arrays with numpy.save)");
  const int major = static_cast<unsigned char>(bytes[6]);
  if (major < 1 || major > 3) fail(what, ".npy format version " + std::to_string(major) + " is not supported (1 to 3)");
  const size_t len_bytes = major == 1 ? 2 : 4;
  if (bytes.size() < 8 + len_bytes) fail(what, "the .npy file is truncated");
  size_t header_len = 0;
  for (size_t i = 0; i < len_bytes; ++i) header_len |= size_t{static_cast<unsigned char>(bytes[8 + i])} << (8 * i);
  const size_t data_at = 8 + len_bytes + header_len;
  if (bytes.size() < data_at) fail(what, "the .npy file is truncated (its header says " + std::to_string(header_len) + " bytes)");
  const std::string header(bytes.substr(8 + len_bytes, header_len));

  const std::string descr = field(header, "descr", what);
  if (field(header, "fortran_order", what) != "False")
    fail(what, "the array is in Fortran order; save a C-ordered copy (numpy.save(f, numpy.ascontiguousarray(a)))",
         ErrorCode::unimplemented);
  if (descr.size() < 3 || (descr[0] != '<' && descr[0] != '|' && descr[0] != '>' && descr[0] != '='))
    fail(what, "dtype '" + descr + "' is not supported (structured or object arrays cannot be fed)", ErrorCode::unimplemented);
  const auto dt = dtype_of(descr.substr(1));
  if (!dt)
    fail(what, "dtype '" + descr + "' is not one kiln has (bool, int8-64, uint8-64, float16/32/64); convert it with a.astype(...)",
         ErrorCode::unimplemented);
  if (descr[0] == '>' && dt->itemsize() > 1)
    fail(what, "the data is big-endian ('" + descr + "'); save a little-endian copy (a.astype(a.dtype.newbyteorder('<')))",
         ErrorCode::unimplemented);

  Shape shape;
  const std::string dims = field(header, "shape", what);  // "()", "(3,)", "(2, 3)"
  if (dims.size() < 2 || dims.front() != '(' || dims.back() != ')') fail(what, "the .npy shape '" + dims + "' is malformed");
  int64_t numel = 1;
  for (size_t i = 1; i + 1 < dims.size();) {
    while (i + 1 < dims.size() && (dims[i] == ' ' || dims[i] == ',')) ++i;
    if (i + 1 >= dims.size()) break;
    int64_t d = 0;
    size_t start = i;
    while (i + 1 < dims.size() && dims[i] >= '0' && dims[i] <= '9' && d < (int64_t{1} << 48)) d = d * 10 + (dims[i++] - '0');
    if (i == start || (dims[i] != ',' && dims[i] != ' ' && dims[i] != ')')) fail(what, "the .npy shape '" + dims + "' is malformed");
    if (__builtin_mul_overflow(numel, d, &numel) || numel > (int64_t{1} << 48)) fail(what, "the .npy shape " + dims + " is too large");
    shape.push_back(d);
  }
  const uint64_t nbytes = static_cast<uint64_t>(numel) * dt->itemsize();
  if (bytes.size() - data_at != nbytes)
    fail(what, "holds " + std::to_string(bytes.size() - data_at) + " bytes of data, its shape " + dims + " and " + dt->name() +
                   " need " + std::to_string(nbytes) + " (a truncated file?)");
  std::string data(bytes.substr(data_at));
  if (dt->is_bool())
    for (char& c : data) c = c != 0;
  return Tensor::from_bytes(data.data(), nbytes, *dt, shape, device);
}

Tensor read_npy(const std::string& path, const std::string& device) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(ErrorCode::not_found, path + ": cannot open the .npy file");
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return parse_npy(bytes, path, device);
}

}  // namespace kiln::cli
