// support/text.hpp - the one string escaper: text as a double-quoted literal, and UTF-8 checks.
//
// quote() is what the core writes TOML strings with (backend options handed to plugins, keys
// that are not bare), what the CLI writes JSON strings with, and how the conformance kit frames
// a test's detail on its pipe. JSON strings and TOML basic strings share one escape syntax
// (\" \\ \b \f \n \r \t \uXXXX), so one function serves all three. Text from plugins is not
// trusted to be UTF-8; both formats must be, so a malformed byte becomes \ufffd. The reading side
// is a TOML or JSON parser (toml++, the SDK's options parser, any JSON reader).
//
// It lives in support/ because every user may include it: the plugin layer and the CLI, and the
// conformance kit (which links the core). The SDK's headers may not (they depend on nothing in the
// core), and they only ever read such strings (kiln/sdk/options.hpp).
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace kiln {

// `s` between double quotes, valid as a JSON string and as a TOML basic string: ", \ and control
// characters (DEL included) are escaped, well-formed UTF-8 is kept, malformed bytes become \ufffd.
std::string quote(std::string_view s);

// Bytes of the well-formed UTF-8 character starting at s[i]; 0 when it is malformed (a stray
// continuation byte, an overlong form, a surrogate, past U+10FFFF or cut off).
size_t utf8_char_length(std::string_view s, size_t i);

}  // namespace kiln
