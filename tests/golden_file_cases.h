// Every case of a golden file read once, with the file's provenance and EX2 profile: the
// committed smoke file for test_check, test_level_i and test_anatomy.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "golden_test_util.h"
#include "io/case_io.h"
#include "judge/ex2_for_file.h"

namespace tqref::test {

struct GoldenFileCases {
  golden::Provenance prov;
  std::optional<Ex2Profile> ex2;
  std::vector<golden::GoldenCase> cases;
  explicit GoldenFileCases(const std::string& file) {
    h5::Node root = h5::Node::open_file(file);
    prov = golden::read_provenance(root);
    ex2 = judge::ex2_for_file(prov, file);
    h5::Node c = root.group("cases");
    for (const auto& n : c.children()) cases.push_back(golden::read_case(c, n, false));
  }
};

// The committed smoke file (without diagnostics), read on first use.
inline const GoldenFileCases& smoke() {
  static const GoldenFileCases s(kCommittedSmoke);
  return s;
}

}  // namespace tqref::test
