// tensor/safetensors.cpp - the safetensors reader and writer (kiln/safetensors.hpp), with the small
// JSON reader the header needs (objects, arrays, strings, integers; anything else in
// "__metadata__" or unknown keys is skipped as a value).
#include "kiln/safetensors.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "support/check.hpp"
#include "tensor/tensor_state.hpp"

namespace kiln::safetensors {

namespace {

const std::pair<Scalar, const char*> kCodes[] = {
    {Scalar::bool_, "BOOL"}, {Scalar::int8, "I8"},   {Scalar::uint8, "U8"},     {Scalar::int16, "I16"},
    {Scalar::uint16, "U16"}, {Scalar::int32, "I32"}, {Scalar::uint32, "U32"},   {Scalar::int64, "I64"},
    {Scalar::uint64, "U64"}, {Scalar::float16, "F16"}, {Scalar::bfloat16, "BF16"}, {Scalar::float32, "F32"},
    {Scalar::float64, "F64"},
};

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') out += '\\', out += static_cast<char>(c);
    else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else out += static_cast<char>(c);
  }
  return out + "\"";
}

// A JSON value as the header needs it.
struct Json {
  enum Kind { null, boolean, number, string, array, object } kind = null;
  std::string str;  // string, or a number's text
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> members;
};

class Parser {
 public:
  Parser(const char* p, const char* end) : p_(p), end_(end) {}
  Json document() {
    Json v = value(0);
    ws();
    if (p_ != end_) error("unexpected text after the header's object");
    return v;
  }

 private:
  [[noreturn]] void error(const std::string& what) {
    fail(ErrorCode::data_loss, "safetensors: the header is not valid JSON (", what, " at byte ", consumed(), ")");
  }
  size_t consumed() const { return static_cast<size_t>(end_ - p_); }
  void ws() {
    while (p_ != end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) ++p_;
  }
  bool eat(char c) {
    ws();
    if (p_ != end_ && *p_ == c) return ++p_, true;
    return false;
  }
  void expect(char c) {
    if (!eat(c)) error(std::string("expected '") + c + "'");
  }
  Json value(int depth) {
    if (depth > 64) error("nesting deeper than 64");
    ws();
    if (p_ == end_) error("unexpected end");
    Json v;
    if (*p_ == '{') {
      ++p_;
      v.kind = Json::object;
      if (eat('}')) return v;
      do {
        ws();
        std::string key = string_body();
        expect(':');
        v.members.emplace_back(std::move(key), value(depth + 1));
      } while (eat(','));
      expect('}');
    } else if (*p_ == '[') {
      ++p_;
      v.kind = Json::array;
      if (eat(']')) return v;
      do v.items.push_back(value(depth + 1));
      while (eat(','));
      expect(']');
    } else if (*p_ == '"') {
      v.kind = Json::string;
      v.str = string_body();
    } else if (*p_ == '-' || (*p_ >= '0' && *p_ <= '9')) {
      v.kind = Json::number;
      while (p_ != end_ && (std::strchr("+-.eE", *p_) || (*p_ >= '0' && *p_ <= '9'))) v.str += *p_++;
    } else if (literal("true") || literal("false")) {
      v.kind = Json::boolean;
    } else if (literal("null")) {
      v.kind = Json::null;
    } else {
      error(std::string("unexpected character '") + *p_ + "'");
    }
    return v;
  }
  bool literal(const char* word) {
    size_t n = std::strlen(word);
    if (static_cast<size_t>(end_ - p_) >= n && std::memcmp(p_, word, n) == 0) return p_ += n, true;
    return false;
  }
  void utf8(uint32_t cp, std::string& out) {
    if (cp < 0x80) out += static_cast<char>(cp);
    else if (cp < 0x800) out += static_cast<char>(0xC0 | cp >> 6), out += static_cast<char>(0x80 | (cp & 0x3F));
    else if (cp < 0x10000)
      out += static_cast<char>(0xE0 | cp >> 12), out += static_cast<char>(0x80 | (cp >> 6 & 0x3F)), out += static_cast<char>(0x80 | (cp & 0x3F));
    else
      out += static_cast<char>(0xF0 | cp >> 18), out += static_cast<char>(0x80 | (cp >> 12 & 0x3F)),
          out += static_cast<char>(0x80 | (cp >> 6 & 0x3F)), out += static_cast<char>(0x80 | (cp & 0x3F));
  }
  uint32_t hex4() {
    if (end_ - p_ < 4) error("short \\u escape");
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      char c = *p_++;
      v = v * 16 + static_cast<uint32_t>(c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : (error("bad \\u escape"), 0));
    }
    return v;
  }
  std::string string_body() {
    if (p_ == end_ || *p_ != '"') error("expected a string");
    ++p_;
    std::string out;
    while (true) {
      if (p_ == end_) error("unterminated string");
      char c = *p_++;
      if (c == '"') return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (p_ == end_) error("unterminated escape");
      char e = *p_++;
      switch (e) {
        case '"': case '\\': case '/': out += e; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          uint32_t cp = hex4();
          if (cp >= 0xD800 && cp < 0xDC00 && end_ - p_ >= 6 && p_[0] == '\\' && p_[1] == 'u') {
            p_ += 2;
            uint32_t lo = hex4();
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          utf8(cp, out);
          break;
        }
        default: error(std::string("bad escape '\\") + e + "'");
      }
    }
  }
  const char* p_;
  const char* end_;
};

// A non-negative integer of the header (a shape entry or an offset).
uint64_t header_uint(const Json& v, const std::string& name, const char* field) {
  if (v.kind != Json::number || v.str.empty() || v.str.find_first_not_of("0123456789") != std::string::npos || v.str.size() > 19)
    fail(ErrorCode::data_loss, "safetensors: tensor '", name, "': ", field, " must hold non-negative integers, got '", v.str, "'");
  return std::stoull(v.str);
}

const Json* member(const Json& obj, const char* key) {
  for (const auto& [k, v] : obj.members)
    if (k == key) return &v;
  return nullptr;
}

}  // namespace

bool dtype_code(DType dtype, std::string& code) {
  if (dtype.count() != 1 || dtype.is_ptr()) return false;
  for (const auto& [s, c] : kCodes)
    if (s == dtype.scalar()) return code = c, true;
  return false;
}

bool dtype_from_code(const std::string& code, DType& dtype) {
  for (const auto& [s, c] : kCodes)
    if (code == c) return dtype = DType(s), true;
  return false;
}

std::string serialize(const Named& tensors, const Metadata& metadata) {
  std::string header = "{";
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    for (size_t i = 0; i < metadata.size(); ++i) header += (i ? "," : "") + json_string(metadata[i].first) + ":" + json_string(metadata[i].second);
    header += "}";
  }
  uint64_t offset = 0;
  std::map<std::string, size_t> seen;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& [name, t] = tensors[i];
    if (name.empty() || name == "__metadata__")
      fail(ErrorCode::invalid_argument, "safetensors: tensor ", i, " has the name '", name, "', which is ", name.empty() ? "empty" : "reserved");
    if (!seen.emplace(name, i).second)
      fail(ErrorCode::invalid_argument, "safetensors: the name '", name, "' is given twice (tensors ", seen[name], " and ", i, ")");
    std::string code;
    if (!dtype_code(t.dtype(), code))
      fail(ErrorCode::invalid_argument, "safetensors: tensor '", name, "' has dtype ", t.dtype().name(), ", which the format has no code for");
    const uint64_t nbytes = static_cast<uint64_t>(t.numel()) * static_cast<uint64_t>(t.dtype().itemsize());
    header += (header.size() > 1 ? "," : "") + json_string(name) + ":{\"dtype\":\"" + code + "\",\"shape\":[";
    for (size_t d = 0; d < t.shape().size(); ++d) header += (d ? "," : "") + std::to_string(t.shape()[d]);
    header += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + nbytes) + "]}";
    offset += nbytes;
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');  // the data starts 8-byte aligned
  std::string out(8 + header.size() + offset, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<char>(n >> (8 * i) & 0xFF);
  std::memcpy(out.data() + 8, header.data(), header.size());
  // (one realize for all of them, then the host reads)
  std::vector<Tensor> all;
  for (const auto& nt : tensors) all.push_back(nt.second);
  Tensor::realize_all(all);
  char* data = out.data() + 8 + header.size();
  for (const Tensor& t : all) {
    const uint64_t nbytes = static_cast<uint64_t>(t.numel()) * static_cast<uint64_t>(t.dtype().itemsize());
    if (nbytes) t.to_bytes(data, nbytes);
    data += nbytes;
  }
  return out;
}

void save(const std::string& path, const Named& tensors, const Metadata& metadata) {
  std::string bytes = serialize(tensors, metadata);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) fail(ErrorCode::permission_denied, "safetensors: cannot open '", path, "' for writing: ", std::strerror(errno));
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  f.close();
  if (!f) fail(ErrorCode::unavailable, "safetensors: writing '", path, "' failed: ", std::strerror(errno));
}

Contents deserialize(const void* data, uint64_t size, const std::string& device) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  if (size < 8) fail(ErrorCode::data_loss, "safetensors: ", size, " bytes is shorter than the 8-byte header length");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = n << 8 | bytes[i];
  if (n > size - 8)
    fail(ErrorCode::data_loss, "safetensors: the header length ", n, " runs past the end of the ", size, " bytes");
  const char* text = reinterpret_cast<const char*>(bytes + 8);
  Json header = Parser(text, text + n).document();
  if (header.kind != Json::object) fail(ErrorCode::data_loss, "safetensors: the header is not a JSON object");
  const uint64_t data_size = size - 8 - n;
  const unsigned char* base = bytes + 8 + n;
  Contents out;
  for (const auto& [name, v] : header.members) {
    if (name == "__metadata__") {
      if (v.kind != Json::object) fail(ErrorCode::data_loss, "safetensors: __metadata__ is not an object");
      for (const auto& [k, mv] : v.members)
        if (mv.kind == Json::string) out.metadata.emplace_back(k, mv.str);
      continue;
    }
    const Json* dt = v.kind == Json::object ? member(v, "dtype") : nullptr;
    const Json* shape = v.kind == Json::object ? member(v, "shape") : nullptr;
    const Json* offs = v.kind == Json::object ? member(v, "data_offsets") : nullptr;
    if (!dt || dt->kind != Json::string || !shape || shape->kind != Json::array || !offs || offs->kind != Json::array || offs->items.size() != 2)
      fail(ErrorCode::data_loss, "safetensors: tensor '", name, "' needs \"dtype\" (a string), \"shape\" (an array) and \"data_offsets\" ([begin, end])");
    DType dtype;
    if (!dtype_from_code(dt->str, dtype))
      fail(ErrorCode::unimplemented, "safetensors: tensor '", name, "' has dtype '", dt->str, "', which kiln does not support");
    Shape s;
    uint64_t numel = 1;
    for (const Json& d : shape->items) {
      uint64_t dim = header_uint(d, name, "shape");
      s.push_back(static_cast<int64_t>(dim));
      if (dim && numel > UINT64_MAX / dim) fail(ErrorCode::data_loss, "safetensors: tensor '", name, "' has a shape too large");
      numel *= dim;
    }
    const uint64_t begin = header_uint(offs->items[0], name, "data_offsets"), end = header_uint(offs->items[1], name, "data_offsets");
    if (begin > end || end > data_size)
      fail(ErrorCode::data_loss, "safetensors: tensor '", name, "' has data_offsets [", begin, ", ", end, "] outside the ", data_size,
           " bytes of data");
    const uint64_t itemsize = static_cast<uint64_t>(dtype.itemsize());
    if (numel > UINT64_MAX / itemsize || end - begin != numel * itemsize)
      fail(ErrorCode::data_loss, "safetensors: tensor '", name, "' of dtype ", dt->str, " and shape ", detail::shape_str(s), " needs ",
           numel * itemsize, " bytes, but its data_offsets [", begin, ", ", end, "] hold ", end - begin);
    out.tensors.emplace_back(name, Tensor::from_bytes(base + begin, end - begin, dtype, s, device));
  }
  return out;
}

Contents load(const std::string& path, const std::string& device) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail(ErrorCode::not_found, "safetensors: cannot open '", path, "': ", std::strerror(errno));
  std::ostringstream ss;
  ss << f.rdbuf();
  std::string bytes = ss.str();
  try {
    return deserialize(bytes.data(), bytes.size(), device);
  } catch (const Error& e) {
    throw Error(e.code(), cat(e.what(), " (in '", path, "')"));
  }
}

}  // namespace kiln::safetensors
