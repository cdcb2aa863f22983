// kiln/sdk/options.hpp - the backend options a plugin receives in initialize(), parsed.
//
// The host passes the merged [backend.options] table as TOML text. It always writes one
// `dotted.key = value` line per leaf, so this parser needs only a TOML subset: comments, [table]
// headers, bare/quoted dotted keys, basic and literal strings, integers (decimal, 0x, 0o, 0b, with
// underscores), floats (incl. inf/nan), booleans and (nested, multi-line) arrays. Multi-line
// strings, inline tables and dates are rejected with a clear message. Header-only; the standard
// library only.
#pragma once
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kiln/sdk/error.hpp"

namespace kiln::sdk {

struct OptionValue {
  enum class Kind { string, integer, floating, boolean, array };
  Kind kind = Kind::string;
  std::string string;
  int64_t integer = 0;
  double floating = 0;
  bool boolean = false;
  std::vector<OptionValue> array;

  const char* kind_name() const {
    switch (kind) {
      case Kind::string: return "string";
      case Kind::integer: return "integer";
      case Kind::floating: return "float";
      case Kind::boolean: return "boolean";
      case Kind::array: return "array";
    }
    return "?";
  }
};

// Parsed options: an ordered list of (full dotted key, value). Getters return the default when a key
// is absent and throw Error{INVALID_ARGUMENT} naming the key when it has the wrong type, so a
// plugin's initialize() reports bad configuration precisely (the host shows it as config-error).
class Options {
 public:
  Options() = default;

  static Options parse(std::string_view text);

  const OptionValue* find(std::string_view key) const {
    for (const auto& [k, v] : entries_)
      if (k == key) return &v;
    return nullptr;
  }
  bool has(std::string_view key) const { return find(key) != nullptr; }
  const std::vector<std::pair<std::string, OptionValue>>& entries() const { return entries_; }

  std::string get_string(std::string_view key, std::string_view def) const {
    const OptionValue* v = find(key);
    if (!v) return std::string(def);
    expect(key, *v, OptionValue::Kind::string);
    return v->string;
  }
  int64_t get_int(std::string_view key, int64_t def) const {
    const OptionValue* v = find(key);
    if (!v) return def;
    expect(key, *v, OptionValue::Kind::integer);
    return v->integer;
  }
  double get_float(std::string_view key, double def) const {
    const OptionValue* v = find(key);
    if (!v) return def;
    if (v->kind == OptionValue::Kind::integer) return static_cast<double>(v->integer);
    expect(key, *v, OptionValue::Kind::floating);
    return v->floating;
  }
  bool get_bool(std::string_view key, bool def) const {
    const OptionValue* v = find(key);
    if (!v) return def;
    expect(key, *v, OptionValue::Kind::boolean);
    return v->boolean;
  }
  // A string that must be one of `choices`: its index (an enum listed in the same order). Another
  // value throws Error{INVALID_ARGUMENT}: "option 'k' must be \"a\", \"b\" or \"c\", got \"x\"".
  size_t get_choice(std::string_view key, std::string_view def, std::initializer_list<std::string_view> choices) const {
    std::string value = get_string(key, def);
    std::string list;
    size_t i = 0;
    for (std::string_view c : choices) {
      if (c == value) return i;
      if (i) list += i + 1 == choices.size() ? " or " : ", ";
      list += "\"" + std::string(c) + "\"";
      ++i;
    }
    throw Error{KILN_STATUS_INVALID_ARGUMENT, "option '" + std::string(key) + "' must be " + list + ", got \"" + value + "\""};
  }
  // An array of strings; a single string is accepted as a one-element list.
  std::vector<std::string> get_strings(std::string_view key, std::vector<std::string> def) const {
    const OptionValue* v = find(key);
    if (!v) return def;
    if (v->kind == OptionValue::Kind::string) return {v->string};
    expect(key, *v, OptionValue::Kind::array);
    std::vector<std::string> out;
    for (const OptionValue& item : v->array) {
      if (item.kind != OptionValue::Kind::string)
        throw Error{KILN_STATUS_INVALID_ARGUMENT,
                    "option '" + std::string(key) + "' must be an array of strings, found a " + item.kind_name()};
      out.push_back(item.string);
    }
    return out;
  }

  // Keys not in `known` (a plugin logs them as warnings: probably typos).
  std::vector<std::string> unknown_keys(std::initializer_list<std::string_view> known) const {
    std::vector<std::string> out;
    for (const auto& entry : entries_) {
      bool found = false;
      for (std::string_view k : known) found = found || entry.first == k;
      if (!found) out.push_back(entry.first);
    }
    return out;
  }

 private:
  static void expect(std::string_view key, const OptionValue& v, OptionValue::Kind kind) {
    if (v.kind == kind) return;
    OptionValue want;
    want.kind = kind;
    const char* article = kind == OptionValue::Kind::integer || kind == OptionValue::Kind::array ? "an " : "a ";
    throw Error{KILN_STATUS_INVALID_ARGUMENT, "option '" + std::string(key) + "' must be " + article + want.kind_name() +
                                                  ", got " + v.kind_name()};
  }

  friend struct OptionsParser;
  std::vector<std::pair<std::string, OptionValue>> entries_;
};

// The TOML-subset parser behind Options::parse.
struct OptionsParser {
  std::string_view s;
  size_t i = 0;
  Options out;
  std::string table;  // current [table] prefix, with a trailing '.'

  [[noreturn]] void fail(const std::string& what) const {
    size_t line = 1, col = 1;
    for (size_t k = 0; k < i && k < s.size(); ++k) {
      if (s[k] == '\n') line++, col = 1;
      else col++;
    }
    throw Error{KILN_STATUS_INVALID_ARGUMENT,
                "options:" + std::to_string(line) + ":" + std::to_string(col) + ": " + what};
  }
  bool at_end() const { return i >= s.size(); }
  char peek() const { return at_end() ? '\0' : s[i]; }
  void skip_blank() {  // spaces and tabs only
    while (!at_end() && (s[i] == ' ' || s[i] == '\t')) i++;
  }
  void skip_comment() {
    if (peek() == '#')
      while (!at_end() && s[i] != '\n') i++;
  }
  void skip_all() {  // whitespace, newlines and comments (inside arrays)
    for (;;) {
      skip_blank();
      skip_comment();
      if (peek() == '\n' || peek() == '\r') i++;
      else return;
    }
  }
  void end_line() {
    skip_blank();
    skip_comment();
    if (peek() == '\r') i++;
    if (!at_end() && s[i] != '\n') fail(std::string("expected end of line, found '") + s[i] + "'");
    if (!at_end()) i++;
  }
  static bool bare(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  }
  std::string key() {
    std::string k;
    for (;;) {
      skip_blank();
      if (peek() == '"') k += basic_string();
      else if (peek() == '\'') k += literal_string();
      else {
        size_t b = i;
        while (!at_end() && bare(s[i])) i++;
        if (b == i) fail("expected a key");
        k += s.substr(b, i - b);
      }
      skip_blank();
      if (peek() != '.') return k;
      i++;
      k += '.';
    }
  }
  static void utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) out += char(cp);
    else if (cp < 0x800) out += char(0xC0 | (cp >> 6)), out += char(0x80 | (cp & 0x3F));
    else if (cp < 0x10000)
      out += char(0xE0 | (cp >> 12)), out += char(0x80 | ((cp >> 6) & 0x3F)), out += char(0x80 | (cp & 0x3F));
    else
      out += char(0xF0 | (cp >> 18)), out += char(0x80 | ((cp >> 12) & 0x3F)),
          out += char(0x80 | ((cp >> 6) & 0x3F)), out += char(0x80 | (cp & 0x3F));
  }
  std::string basic_string() {
    if (s.substr(i, 3) == "\"\"\"") fail("multi-line strings are not supported in backend options");
    i++;  // opening quote
    std::string out;
    for (;;) {
      if (at_end() || s[i] == '\n') fail("unterminated string");
      char c = s[i++];
      if (c == '"') return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      char e = at_end() ? '\0' : s[i++];
      switch (e) {
        case 'b': out += '\b'; break;
        case 't': out += '\t'; break;
        case 'n': out += '\n'; break;
        case 'f': out += '\f'; break;
        case 'r': out += '\r'; break;
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case 'u':
        case 'U': {
          size_t n = e == 'u' ? 4 : 8;
          if (i + n > s.size()) fail("truncated unicode escape");
          std::string hex(s.substr(i, n));
          char* end = nullptr;
          unsigned long cp = std::strtoul(hex.c_str(), &end, 16);
          if (*end != '\0') fail("bad unicode escape");
          i += n;
          utf8(out, static_cast<uint32_t>(cp));
          break;
        }
        default: fail(std::string("unknown escape '\\") + e + "'");
      }
    }
  }
  std::string literal_string() {
    if (s.substr(i, 3) == "'''") fail("multi-line strings are not supported in backend options");
    size_t b = ++i;
    while (!at_end() && s[i] != '\'' && s[i] != '\n') i++;
    if (peek() != '\'') fail("unterminated string");
    return std::string(s.substr(b, i++ - b));
  }
  OptionValue scalar() {
    size_t b = i;
    while (!at_end() && (bare(s[i]) || s[i] == '+' || s[i] == '.')) i++;
    std::string tok(s.substr(b, i - b));
    OptionValue v;
    if (tok == "true" || tok == "false") {
      v.kind = OptionValue::Kind::boolean;
      v.boolean = tok == "true";
      return v;
    }
    std::string digits;
    for (char c : tok)
      if (c != '_') digits += c;
    if (digits.empty()) fail("expected a value");
    std::string body = digits[0] == '+' || digits[0] == '-' ? digits.substr(1) : digits;
    if (body == "inf" || body == "nan") {
      v.kind = OptionValue::Kind::floating;
      v.floating = body == "inf" ? HUGE_VAL : NAN;
      if (digits[0] == '-') v.floating = -v.floating;
      return v;
    }
    int base = 10;
    if (body.size() > 2 && body[0] == '0' && (body[1] == 'x' || body[1] == 'o' || body[1] == 'b')) {
      base = body[1] == 'x' ? 16 : body[1] == 'o' ? 8 : 2;
      if (digits[0] == '-' || digits[0] == '+') fail("a sign is not allowed on " + tok);
      digits = body.substr(2);
    }
    char* end = nullptr;
    errno = 0;
    bool is_float = base == 10 && digits.find_first_of(".eE") != std::string::npos;
    if (is_float) {
      v.kind = OptionValue::Kind::floating;
      v.floating = std::strtod(digits.c_str(), &end);
    } else {
      v.kind = OptionValue::Kind::integer;
      v.integer = std::strtoll(digits.c_str(), &end, base);
    }
    if (end == digits.c_str() || *end != '\0') fail("cannot parse value '" + tok + "'");
    if (errno == ERANGE) fail("value '" + tok + "' is out of range");
    return v;
  }
  OptionValue value() {
    skip_blank();
    char c = peek();
    OptionValue v;
    if (c == '"') {
      v.string = basic_string();
    } else if (c == '\'') {
      v.string = literal_string();
    } else if (c == '[') {
      i++;
      v.kind = OptionValue::Kind::array;
      for (;;) {
        skip_all();
        if (peek() == ']') {
          i++;
          break;
        }
        v.array.push_back(value());
        skip_all();
        if (peek() == ',') i++;
        else if (peek() != ']') fail("expected ',' or ']' in array");
      }
    } else if (c == '{') {
      fail("inline tables are not supported in backend options; use dotted keys");
    } else {
      v = scalar();
    }
    return v;
  }
  Options run() {
    for (;;) {
      skip_all();
      if (at_end()) return std::move(out);
      if (peek() == '[') {
        i++;
        if (peek() == '[') fail("arrays of tables are not supported in backend options");
        std::string name = key();
        if (peek() != ']') fail("expected ']' after the table name");
        i++;
        table = name + ".";
        end_line();
        continue;
      }
      std::string k = table + key();
      if (peek() != '=') fail("expected '=' after key '" + k + "'");
      i++;
      OptionValue v = value();
      if (out.has(k)) fail("duplicate key '" + k + "'");
      out.entries_.emplace_back(std::move(k), std::move(v));
      end_line();
    }
  }
};

inline Options Options::parse(std::string_view text) {
  OptionsParser p{text, 0, Options{}, std::string()};
  return p.run();
}

}  // namespace kiln::sdk
