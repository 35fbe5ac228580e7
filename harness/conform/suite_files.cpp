#include "conform/suite_files.h"

#include <cstdlib>
#include <filesystem>

#include "conform/options.h"
#include "io/case_io.h"
#include "io/data_dir.h"
#include "judge/ex2_for_file.h"

namespace tqref::conform {

SuiteFile find_suite_file(const std::string& item) {
  SuiteFile f;
  f.name = item;
  if (!is_named_suite(item)) {
    f.looked_in.push_back(item);
  } else {
    f.looked_in = data_file_candidates("golden/" + item + ".h5");
  }
  for (const auto& p : f.looked_in) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(p, ec)) {
      f.path = p;
      break;
    }
  }
  return f;
}

OpenedSuite open_suite(const std::string& path, Ex2ByFileId* loaded) {
  h5::Node root = golden::open_golden_file(path);
  golden::Provenance prov = golden::read_provenance(root);
  const std::string id = prov.ex2_profile_id;  // a copy: prov is moved from below
  if (loaded && loaded->count(id)) return {std::move(root), std::move(prov), loaded->at(id)};
  std::optional<Ex2Profile> ex2 = judge::ex2_for_file(prov, path);
  if (loaded) loaded->emplace(id, ex2);
  return {std::move(root), std::move(prov), std::move(ex2)};
}

void open_suite_files(std::vector<SuiteFile>& suites) {
  Ex2ByFileId loaded;  // the suites of a run are usually generated with one profile
  for (SuiteFile& s : suites) {
    if (s.path.empty()) continue;
    try {
      s.opened = std::make_shared<const OpenedSuite>(open_suite(s.path, &loaded));
    } catch (const std::exception&) {
      s.opened.reset();  // run_suite opens it again and reports the error for each module
    }
  }
}

}  // namespace tqref::conform
