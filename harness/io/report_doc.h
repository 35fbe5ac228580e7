// Reports as documents, not concatenated strings: JSON through nlohmann::json (Debian
// nlohmann-json3-dev) and JUnit XML through pugixml (libpugixml-dev). Every report tqref writes
// (`tqref check --report/--junit`, `tqref conform`'s conform.json and conform.junit.xml, the
// failure anatomy inside them, the Python API's replies) is built as a value and turned into text
// here, so quoting, escaping and the XML declaration have one home.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace tqref::report {

// A JSON value whose objects keep their keys in the order they were set, so a report reads in
// the order its writer chose (file, backend, ... before results).
using Json = nlohmann::ordered_json;

// The document as text: two-space indent and a final newline. Strings are written as they are
// (UTF-8 kept); bytes that are not UTF-8 (names from a hostile file) become U+FFFD instead of
// ending the report.
std::string json_text(const Json& j);
// The same on one line, no newline (values nested in a larger text, the Python API's replies).
std::string json_line(const Json& j);

// `x` as the number printf(`format`, x) shows ("%.6g", "%.9g", "%.6f"), so a report carries the
// figures to the precision its writer means; null when x is not finite.
Json json_number(double x, const char* format);

// One JUnit testcase. A case with an `error` (it could not be run) is an error; otherwise a case
// that did not pass is a failure with `message` and `text` (the first mismatches).
struct JunitCase {
  std::string classname, name;
  double seconds = 0;
  bool pass = true;
  std::string error;
  std::string message, text;
};

// One JUnit testsuite; its tests/failures/errors/time attributes are counted from the cases.
struct JunitSuite {
  std::string name;
  std::vector<std::pair<std::string, std::string>> properties;
  std::vector<JunitCase> cases;
};

// A JUnit document holding one <testsuite>.
std::string junit_text(const JunitSuite& suite);
// A JUnit document holding <testsuites name="..."> around several suites.
std::string junit_text(const std::string& name, const std::vector<JunitSuite>& suites);

}  // namespace tqref::report
