// A sweep's JSON and CSV documents written as its points finish, so memory is bounded by the
// points in flight, not the sweep's size. The bytes are those of json_text(sweep_document(...))
// and sweep_csv(...) over the same points. Outputs open at the first valid point: a sweep none
// of whose points is a possible plan writes nothing (the caller reports it as bad input).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/output_file.hpp"
#include "reports/sweep_report.hpp"
#include "studies/sweep.hpp"

namespace moesim {

class SweepStream {
 public:
  // `json_path`, `csv_path`: "" for none, "-" for standard output.
  // `inputs`: the base scenario's resolved inputs when the points are summaries (sweep_document).
  SweepStream(const std::string& scenario_name, const SweepSpec& spec, std::string json_path, std::string csv_path,
              const nlohmann::json& inputs = nullptr);
  // One point document (sweep_point_json), in point order.
  void add(const nlohmann::json& point);
  bool any_valid() const { return valid_ > 0; }
  // Writes the documents' tails and replaces the files. Only once a valid point was added.
  void finish();

 private:
  struct Pieces {
    std::string json, csv;
  };
  Pieces render(const nlohmann::json& point) const;
  void open();
  void write(const Pieces& pieces);

  std::string json_path_, csv_path_;
  std::string json_head_;  // the document's text up to its points array's "["
  std::optional<OutputStream> json_, csv_;
  std::vector<Pieces> held_;  // invalid points before the first valid one
  std::size_t points_ = 0, invalid_ = 0, valid_ = 0;
  nlohmann::json frame_;
  std::vector<CsvValueColumn> columns_;  // the CSV's varied-value columns
};

}  // namespace moesim
