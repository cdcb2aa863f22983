// tests/plugins/options_test.cpp - backend options: host-side merging and TOML text, and the SDK's
// parser reading exactly what the host writes.
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/sdk/options.hpp"
#include "plugin/diagnostic.hpp"
#include "support/text.hpp"

namespace kiln {
namespace {

TEST(Options, ParsesTheSubsetPluginsReceive) {
  sdk::Options o = sdk::Options::parse(
      "# comment\n"
      "threads = 4\n"
      "flags = \"-O2 \\\"q\\\" \\u00e9\"  # trailing comment\n"
      "raw = 'C:\\path'\n"
      "ratio = 0.5\n"
      "big = 0x_ff\n"
      "neg = -1_000\n"
      "inf = -inf\n"
      "on = true\n"
      "list = [\"a\", 'b',\n  \"c\",]\n"
      "nested.key = [[1, 2], [3]]\n"
      "[table]\n"
      "\"quoted key\" = false\n");
  EXPECT_EQ(o.get_int("threads", 0), 4);
  EXPECT_EQ(o.get_string("flags", ""), "-O2 \"q\" \xc3\xa9");
  EXPECT_EQ(o.get_string("raw", ""), "C:\\path");
  EXPECT_DOUBLE_EQ(o.get_float("ratio", 0), 0.5);
  EXPECT_DOUBLE_EQ(o.get_float("threads", 0), 4.0);  // integers are acceptable floats
  EXPECT_EQ(o.get_int("neg", 0), -1000);
  EXPECT_TRUE(std::isinf(o.get_float("inf", 0)) && o.get_float("inf", 0) < 0);
  EXPECT_TRUE(o.get_bool("on", false));
  EXPECT_EQ(o.get_strings("list", {}), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(o.get_strings("flags", {}).size(), 1u);
  EXPECT_EQ(o.find("nested.key")->array.size(), 2u);
  EXPECT_FALSE(o.get_bool("table.quoted key", true));
  EXPECT_EQ(o.get_int("absent", 9), 9);
  EXPECT_EQ(o.unknown_keys({"threads", "flags", "raw", "ratio", "neg", "inf", "on", "list", "nested.key"}),
            (std::vector<std::string>{"big", "table.quoted key"}));
  EXPECT_EQ(o.get_int("big", 0), 255);
}

TEST(Options, WrongTypesAndBadSyntaxNameTheProblem) {
  sdk::Options o = sdk::Options::parse("threads = \"many\"\nlist = [1]\n");
  try {
    o.get_int("threads", 1);
    FAIL();
  } catch (const sdk::Error& e) {
    EXPECT_EQ(e.code, KILN_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(e.message, "option 'threads' must be an integer, got string");
  }
  EXPECT_THROW(o.get_strings("list", {}), sdk::Error);
  sdk::Options mode = sdk::Options::parse("mode = \"fast\"\n");
  EXPECT_EQ(mode.get_choice("mode", "auto", {"auto", "fast"}), 1u);
  EXPECT_EQ(mode.get_choice("absent", "fast", {"auto", "fast"}), 1u);
  try {
    mode.get_choice("mode", "auto", {"auto", "on", "off"});
    FAIL();
  } catch (const sdk::Error& e) {
    EXPECT_EQ(e.code, KILN_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(e.message, "option 'mode' must be \"auto\", \"on\" or \"off\", got \"fast\"");
  }
  for (const char* bad : {"a = ", "a = \"open", "a = 1\na = 2", "a = {x = 1}", "a = '''x'''", "= 1", "a = 1 b"}) {
    try {
      sdk::Options::parse(bad);
      ADD_FAILURE() << "accepted: " << bad;
    } catch (const sdk::Error& e) {
      EXPECT_EQ(e.message.rfind("options:", 0), 0u) << e.message;
    }
  }
}

TEST(Options, HostTextRoundTripsThroughTheSdkParser) {
  std::vector<OptionEntry> manifest{{"flags", "flags", "\"-O2\"", "m:1:1"},
                                    {"compiler.path", "compiler.path", "\"/usr/bin/clang\"", "m:2:1"},
                                    {"threads", "threads", "0", "m:3:1"}};
  std::vector<OptionEntry> config{{"threads", "threads", "8", "c:1:1"},
                                  {"compiler", "compiler", "\"clang-16\"", "c:2:1"},
                                  {"odd key", "\"odd key\"", "[1, \"two\"]", "c:3:1"}};
  std::vector<OptionEntry> merged = merge_options(manifest, config);
  ASSERT_EQ(merged.size(), 4u);  // compiler replaces compiler.path: one key may not be both
  std::string text = options_to_toml(merged);
  EXPECT_EQ(text, "flags = \"-O2\"\nthreads = 8\ncompiler = \"clang-16\"\n\"odd key\" = [1, \"two\"]\n");
  sdk::Options o = sdk::Options::parse(text);
  EXPECT_EQ(o.get_int("threads", 0), 8);
  EXPECT_EQ(o.get_string("compiler", ""), "clang-16");
  EXPECT_FALSE(o.has("compiler.path"));
  EXPECT_EQ(o.find("odd key")->array.at(1).string, "two");
}

// quote() (support/text.hpp) is the one escaper: the core's TOML strings, the CLI's JSON strings
// and the conformance kit's pipe. What it writes, the SDK's reader reads back byte for byte.
TEST(Options, QuotedTextRoundTripsThroughTheSdkParser) {
  std::string every_control;
  for (int c = 0; c < 0x20; ++c) every_control += static_cast<char>(c);
  every_control += '\x7f';
  const std::string cases[] = {"", "plain", "say \"hi\"", "C:\\path\\", "tab\tnew\nline\r", every_control,
                               "\xc3\xa9t\xc3\xa9 \xf0\x9f\x94\xa5", "a = 1 # not a comment"};
  for (const std::string& text : cases) {
    std::string q = quote(text);
    EXPECT_EQ(q.find_first_of("\n\t"), std::string::npos) << q;  // one line, one field
    EXPECT_EQ(sdk::Options::parse("v = " + q).get_string("v", "?"), text) << q;
  }
  EXPECT_EQ(quote("\x1b[31m\b\f\x7f"), "\"\\u001b[31m\\b\\f\\u007f\"");
  // malformed UTF-8 (a stray continuation byte, a cut-off sequence) becomes U+FFFD
  EXPECT_EQ(quote("a\x80" "b\xe2\x82"), "\"a\\ufffdb\\ufffd\\ufffd\"");
}

}  // namespace
}  // namespace kiln
