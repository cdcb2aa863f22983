// tests/common/json_check.cpp - a strict JSON well-formedness check (RFC 8259 grammar).
#include "json_check.hpp"

#include <cstring>

namespace kiln::test {

namespace {

struct JsonChecker {
  const std::string& s;
  size_t i = 0;
  std::string error;

  void ws() {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t')) ++i;
  }
  bool fail(const std::string& what) {
    if (error.empty()) error = what + " at byte " + std::to_string(i);
    return false;
  }
  bool lit(const char* word) {
    size_t n = std::strlen(word);
    if (s.compare(i, n, word) != 0) return fail(std::string("expected ") + word);
    i += n;
    return true;
  }
  bool string() {
    if (i >= s.size() || s[i] != '"') return fail("expected a string");
    for (++i; i < s.size(); ++i) {
      unsigned char c = static_cast<unsigned char>(s[i]);
      if (c == '"') return ++i, true;
      if (c < 0x20) return fail("control character in a string");
      if (c == '\\') {
        if (++i >= s.size()) break;
        if (s[i] == 'u') {
          for (int k = 1; k <= 4; ++k)
            if (i + k >= s.size() || !std::isxdigit(static_cast<unsigned char>(s[i + k]))) return fail("bad \\u escape");
          i += 4;
        } else if (!std::strchr("\"\\/bfnrt", s[i])) {
          return fail("bad escape");
        }
      }
    }
    return fail("unterminated string");
  }
  bool number() {
    size_t b = i;
    if (s[i] == '-') ++i;
    if (i < s.size() && s[i] == '0') ++i;
    else if (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])))
      while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    else return fail("bad number");
    if (i < s.size() && s[i] == '.') {
      if (++i >= s.size() || !std::isdigit(static_cast<unsigned char>(s[i]))) return fail("bad fraction");
      while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    }
    if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
      ++i;
      if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
      if (i >= s.size() || !std::isdigit(static_cast<unsigned char>(s[i]))) return fail("bad exponent");
      while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    }
    return i > b;
  }
  bool value(int depth) {
    if (depth > 64) return fail("too deep");
    ws();
    if (i >= s.size()) return fail("unexpected end");
    char c = s[i];
    if (c == '{') {
      ++i;
      ws();
      if (i < s.size() && s[i] == '}') return ++i, true;
      for (;;) {
        ws();
        if (!string()) return false;
        ws();
        if (i >= s.size() || s[i++] != ':') return fail("expected ':'");
        if (!value(depth + 1)) return false;
        ws();
        if (i < s.size() && s[i] == ',') { ++i; continue; }
        if (i < s.size() && s[i] == '}') return ++i, true;
        return fail("expected ',' or '}'");
      }
    }
    if (c == '[') {
      ++i;
      ws();
      if (i < s.size() && s[i] == ']') return ++i, true;
      for (;;) {
        if (!value(depth + 1)) return false;
        ws();
        if (i < s.size() && s[i] == ',') { ++i; continue; }
        if (i < s.size() && s[i] == ']') return ++i, true;
        return fail("expected ',' or ']'");
      }
    }
    if (c == '"') return string();
    if (c == 't') return lit("true");
    if (c == 'f') return lit("false");
    if (c == 'n') return lit("null");
    return number();
  }
};

}  // namespace

bool is_valid_json(const std::string& text, std::string* error) {
  JsonChecker c{text, 0, {}};
  bool ok = c.value(0);
  c.ws();
  if (ok && c.i != text.size()) ok = c.fail("trailing characters");
  if (!ok && error) *error = c.error;
  return ok;
}

}  // namespace kiln::test
