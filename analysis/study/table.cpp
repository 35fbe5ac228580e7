#include "analysis/study/table.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>
#include <stdexcept>

#include "io/atomic_output.h"
#include "io/hdf5_util.h"

namespace tqref::study {

void Table::add(std::vector<Cell> row) {
  if (row.size() != columns.size())
    throw std::logic_error("table " + name + ": row has " + std::to_string(row.size()) +
                           " cells, header has " + std::to_string(columns.size()));
  rows.push_back(std::move(row));
}

namespace {

std::string csv_cell(const Cell& c) {
  if (auto s = std::get_if<std::string>(&c)) {
    if (s->find_first_of(",\"\n") == std::string::npos) return *s;
    std::string q = "\"";
    for (char ch : *s) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    return q + "\"";
  }
  if (auto i = std::get_if<int64_t>(&c)) return std::to_string(*i);
  double d = std::get<double>(c);
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", d);
  return buf;
}

}  // namespace

void write_csv_dir(const std::string& dir, const std::vector<Table>& tables) {
  std::filesystem::create_directories(dir);
  for (const auto& t : tables) {
    std::ostringstream f;
    for (size_t i = 0; i < t.columns.size(); ++i) f << (i ? "," : "") << t.columns[i];
    f << "\n";
    for (const auto& r : t.rows) {
      for (size_t i = 0; i < r.size(); ++i) f << (i ? "," : "") << csv_cell(r[i]);
      f << "\n";
    }
    // Each table whole or not at all, also on SIGINT/SIGTERM (io/atomic_output.h).
    common::write_file_atomic(dir + "/" + t.name + ".csv", f.str());
  }
}

static void write_h5_tables(const h5::Node& file, const std::vector<Table>& tables) {
  for (const auto& t : tables) {
    auto g = file.create_group(t.name);
    g.set_attr("columns", [&] {
      std::string s;
      for (size_t i = 0; i < t.columns.size(); ++i) s += (i ? "," : "") + t.columns[i];
      return s;
    }());
    const uint64_t n = t.rows.size();
    for (size_t col = 0; col < t.columns.size(); ++col) {
      const Cell& first = n ? t.rows[0][col] : Cell(0.0);
      if (std::holds_alternative<std::string>(first)) {
        std::map<std::string, uint32_t> ids;
        std::vector<std::string> labels;
        std::vector<uint32_t> codes;
        for (const auto& r : t.rows) {
          const auto& s = std::get<std::string>(r[col]);
          auto [it, fresh] = ids.emplace(s, uint32_t(labels.size()));
          if (fresh) labels.push_back(s);
          codes.push_back(it->second);
        }
        g.write(t.columns[col], codes, {n});
        std::string joined;
        for (size_t i = 0; i < labels.size(); ++i) joined += (i ? "\n" : "") + labels[i];
        g.set_attr("categories", joined, t.columns[col]);
      } else if (std::holds_alternative<int64_t>(first)) {
        std::vector<int64_t> v;
        for (const auto& r : t.rows) v.push_back(std::get<int64_t>(r[col]));
        g.write(t.columns[col], v, {n});
      } else {
        std::vector<double> v;
        for (const auto& r : t.rows) v.push_back(std::get<double>(r[col]));
        g.write(t.columns[col], v, {n});
      }
    }
  }
}

void write_h5(const std::string& path, const std::vector<Table>& tables) {
  h5::write_file_atomic(path, [&](const h5::Node& root) { write_h5_tables(root, tables); });
}

}  // namespace tqref::study
