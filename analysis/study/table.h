// Tidy result tables: one row per measurement, named columns, written as CSV files (one per
// table, with a header) or as one HDF5 file (one group per table, one dataset per column).
#pragma once
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace tqref::study {

using Cell = std::variant<std::string, double, int64_t>;

struct Table {
  std::string name;                  // file stem: <name>.csv or HDF5 group /<name>
  std::vector<std::string> columns;
  std::vector<std::vector<Cell>> rows;
  // Appends a row; throws std::logic_error when its width differs from the header's.
  void add(std::vector<Cell> row);
};

// Writes <dir>/<table.name>.csv for each table (creating dir). Doubles with 17 significant
// digits so the CSV round-trips; non-finite values are written as nan/inf.
void write_csv_dir(const std::string& dir, const std::vector<Table>& tables);

// One group per table; numeric columns as float64/int64 datasets; string columns as uint32
// category codes with the attribute "categories" (the labels joined by '\n').
void write_h5(const std::string& path, const std::vector<Table>& tables);

}  // namespace tqref::study
