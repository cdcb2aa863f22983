// tools/kiln/json.cpp - JSON serialisation.
#include "json.hpp"

#include <cmath>
#include <cstdio>

#include "support/text.hpp"

namespace kiln::cli {
namespace {

void newline(std::string& out, int indent, int depth) {
  if (indent <= 0) return;
  out += '\n';
  out.append(static_cast<size_t>(indent * depth), ' ');
}

}  // namespace

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
    out += quote(*s);
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
      out += quote((*o)[k].first);
      out += indent > 0 ? ": " : ":";
      (*o)[k].second.write(out, indent, depth + 1);
    }
    if (!o->empty()) newline(out, indent, depth);
    out += '}';
  }
}

}  // namespace kiln::cli
