#include "io/report_doc.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include <pugixml.hpp>

namespace tqref::report {

namespace {

// Seconds as JUnit dashboards read them (and as tqref always wrote them): fixed, 6 decimals.
std::string junit_seconds(double s) { return std::to_string(s); }

void append_suite(pugi::xml_node parent, const JunitSuite& s) {
  size_t failures = 0, errors = 0;
  double total = 0;
  for (const JunitCase& c : s.cases) {
    errors += !c.pass && !c.error.empty();
    failures += !c.pass && c.error.empty();
    total += c.seconds;
  }
  pugi::xml_node suite = parent.append_child("testsuite");
  suite.append_attribute("name") = s.name.c_str();
  suite.append_attribute("tests") = std::to_string(s.cases.size()).c_str();
  suite.append_attribute("failures") = std::to_string(failures).c_str();
  suite.append_attribute("errors") = std::to_string(errors).c_str();
  suite.append_attribute("time") = junit_seconds(total).c_str();
  if (!s.properties.empty()) {
    pugi::xml_node props = suite.append_child("properties");
    for (const auto& [name, value] : s.properties) {
      pugi::xml_node p = props.append_child("property");
      p.append_attribute("name") = name.c_str();
      p.append_attribute("value") = value.c_str();
    }
  }
  for (const JunitCase& c : s.cases) {
    pugi::xml_node tc = suite.append_child("testcase");
    tc.append_attribute("classname") = c.classname.c_str();
    tc.append_attribute("name") = c.name.c_str();
    tc.append_attribute("time") = junit_seconds(c.seconds).c_str();
    if (c.pass) continue;
    if (!c.error.empty()) {
      tc.append_child("error").append_attribute("message") = c.error.c_str();
    } else {
      pugi::xml_node f = tc.append_child("failure");
      f.append_attribute("message") = c.message.c_str();
      f.text().set(c.text.c_str());
    }
  }
}

std::string xml_text(const pugi::xml_document& doc) {
  std::ostringstream o;
  doc.save(o, "  ", pugi::format_indent, pugi::encoding_utf8);
  return o.str();
}

void add_declaration(pugi::xml_document& doc) {
  pugi::xml_node decl = doc.append_child(pugi::node_declaration);
  decl.append_attribute("version") = "1.0";
  decl.append_attribute("encoding") = "UTF-8";
}

}  // namespace

std::string json_text(const Json& j) {
  return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

std::string json_line(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

Json json_number(double x, const char* format) {
  if (!std::isfinite(x)) return nullptr;
  char b[64];
  std::snprintf(b, sizeof b, format, x);
  return std::strtod(b, nullptr);
}

std::string junit_text(const JunitSuite& suite) {
  pugi::xml_document doc;
  add_declaration(doc);
  append_suite(doc, suite);
  return xml_text(doc);
}

std::string junit_text(const std::string& name, const std::vector<JunitSuite>& suites) {
  pugi::xml_document doc;
  add_declaration(doc);
  pugi::xml_node all = doc.append_child("testsuites");
  all.append_attribute("name") = name.c_str();
  for (const JunitSuite& s : suites) append_suite(all, s);
  return xml_text(doc);
}

}  // namespace tqref::report
