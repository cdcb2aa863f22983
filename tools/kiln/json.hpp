// tools/kiln/json.hpp - a small JSON value for the CLI's --json output (always valid UTF-8 JSON).
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace kiln::cli {

class Json {
 public:
  using Array = std::vector<Json>;
  using Object = std::vector<std::pair<std::string, Json>>;  // insertion order is output order

  Json() = default;  // null
  Json(std::nullptr_t) {}
  Json(bool v) : v_(v) {}
  Json(int v) : v_(int64_t{v}) {}
  Json(int64_t v) : v_(v) {}
  Json(uint32_t v) : v_(int64_t{v}) {}
  Json(uint64_t v) : v_(v) {}
  Json(double v) : v_(v) {}
  Json(const char* v) : v_(std::string(v)) {}
  Json(std::string v) : v_(std::move(v)) {}
  Json(Array v) : v_(std::move(v)) {}
  Json(Object v) : v_(std::move(v)) {}

  static Json object() { return Json(Object{}); }
  static Json array() { return Json(Array{}); }
  // A string, or null when empty (for optional fields such as "error").
  static Json string_or_null(const std::string& s) { return s.empty() ? Json() : Json(s); }

  Json& set(std::string key, Json value);  // on objects
  Json& push(Json value);                  // on arrays

  std::string dump(int indent = 2) const;

 private:
  void write(std::string& out, int indent, int depth) const;
  std::variant<std::nullptr_t, bool, int64_t, uint64_t, double, std::string, Array, Object> v_;
};

// `s` fit for a terminal: control characters (escape sequences, newlines) and bytes that are not
// UTF-8 become \xNN. Strings that come from plugins go through this before they are printed.
std::string terminal_safe(std::string_view s);

}  // namespace kiln::cli
