// tests/common/json_check.hpp - is a text JSON? (for --json output and KILN_TRACE files)
#pragma once
#include <string>

namespace kiln::test {

// A strict JSON well-formedness check (RFC 8259 grammar); `error` says where it failed.
bool is_valid_json(const std::string& text, std::string* error = nullptr);

}  // namespace kiln::test
