// tools/kiln/json.cpp - JSON serialisation.
#include "json.hpp"

#include <cmath>
#include <cstdio>

namespace kiln::cli {
namespace {

void escape(std::string& out, const std::string& s) {
  out += '"';
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {  // plugin strings are not trusted to be UTF-8; JSON must be
      size_t n = utf8_char_length(s, i);
      if (n) out.append(s, i, n), i += n - 1;
      else out += "\\ufffd";
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

void newline(std::string& out, int indent, int depth) {
  if (indent <= 0) return;
  out += '\n';
  out.append(static_cast<size_t>(indent * depth), ' ');
}

}  // namespace

size_t utf8_char_length(std::string_view s, size_t i) {
  auto cont = [&](size_t k) { return i + k < s.size() && (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80; };
  unsigned char c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return 1;
  unsigned char c1 = i + 1 < s.size() ? static_cast<unsigned char>(s[i + 1]) : 0;
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {  // no overlongs (E0 80..9F) and no surrogates (ED A0..BF)
    if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 > 0x9F)) return 0;
    return cont(1) && cont(2) ? 3 : 0;
  }
  if (c >= 0xF0 && c <= 0xF4) {  // no overlongs (F0 80..8F), nothing past U+10FFFF (F4 90..)
    if ((c == 0xF0 && c1 < 0x90) || (c == 0xF4 && c1 > 0x8F)) return 0;
    return cont(1) && cont(2) && cont(3) ? 4 : 0;
  }
  return 0;
}

std::string terminal_safe(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = utf8_char_length(s, i);
    if (c >= 0x80 && n) {
      out.append(s.substr(i, n));
      i += n - 1;
    } else if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
    } else {  // control characters (escape sequences) and bytes that are not UTF-8
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

Json& Json::set(std::string key, Json value) {
  std::get<Object>(v_).emplace_back(std::move(key), std::move(value));
  return *this;
}

Json& Json::push(Json value) {
  std::get<Array>(v_).push_back(std::move(value));
  return *this;
}

std::string Json::dump(int indent) const {
  std::string out;
  write(out, indent, 0);
  return out;
}

void Json::write(std::string& out, int indent, int depth) const {
  if (std::holds_alternative<std::nullptr_t>(v_)) {
    out += "null";
  } else if (auto* b = std::get_if<bool>(&v_)) {
    out += *b ? "true" : "false";
  } else if (auto* i = std::get_if<int64_t>(&v_)) {
    out += std::to_string(*i);
  } else if (auto* u = std::get_if<uint64_t>(&v_)) {
    out += std::to_string(*u);
  } else if (auto* d = std::get_if<double>(&v_)) {
    if (!std::isfinite(*d)) {
      out += "null";  // JSON has no inf/nan
    } else {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.17g", *d);
      out += buf;
    }
  } else if (auto* s = std::get_if<std::string>(&v_)) {
    escape(out, *s);
  } else if (auto* a = std::get_if<Array>(&v_)) {
    out += '[';
    for (size_t k = 0; k < a->size(); ++k) {
      if (k) out += ',';
      newline(out, indent, depth + 1);
      (*a)[k].write(out, indent, depth + 1);
    }
    if (!a->empty()) newline(out, indent, depth);
    out += ']';
  } else if (auto* o = std::get_if<Object>(&v_)) {
    out += '{';
    for (size_t k = 0; k < o->size(); ++k) {
      if (k) out += ',';
      newline(out, indent, depth + 1);
      escape(out, (*o)[k].first);
      out += indent > 0 ? ": " : ":";
      (*o)[k].second.write(out, indent, depth + 1);
    }
    if (!o->empty()) newline(out, indent, depth);
    out += '}';
  }
}

}  // namespace kiln::cli
