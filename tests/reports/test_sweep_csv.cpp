// The sweep CSV (reports/sweep_report.cpp, sweep_csv): its peak_phase column is the phase where
// the worst stage's memory peaks, the same phase the JSON (breaking_phase) and the ledger
// (stages[].peak_phase) report, and the columns readers already use keep their order.
#include <catch2/catch.hpp>

#include <sstream>
#include <string>
#include <vector>

#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {

std::vector<std::string> cells(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream in(line);
  for (std::string cell; std::getline(in, cell, ',');) out.push_back(cell);
  return out;
}

std::size_t column(const std::vector<std::string>& header, const std::string& name) {
  for (std::size_t i = 0; i < header.size(); ++i) {
    if (header[i] == name) return i;
  }
  FAIL("no CSV column " << name);
  return 0;
}

}  // namespace

TEST_CASE("The sweep CSV's peak_phase is the peak memory phase of the JSON and the ledger", "[unit]") {
  test::TempDir dir;
  const std::string scenario = test::source_path("scenarios/fig8/moe-ddp.json");
  REQUIRE(test::run_cli("sweep " + scenario +
                        " --vary architecture.moe.num_experts=48,128 --vary design=ddp,fsdp -j 2" + " --csv " +
                        dir.path("s.csv") + " --json " + dir.path("s.json")) == 0);
  const auto doc = nlohmann::json::parse(test::slurp(dir.path("s.json")));
  std::stringstream csv(test::slurp(dir.path("s.csv")));
  std::string line;
  REQUIRE(std::getline(csv, line));
  const auto header = cells(line);
  // index, one column per axis (num_experts, axis.design), status, then the result columns in
  // their order; peak_phase just before error.
  CHECK(column(header, "num_experts") == 1);
  CHECK(column(header, "axis.design") == 2);
  CHECK(column(header, "breaking_phase") == 21);
  CHECK(column(header, "in_flight_microbatches") == 22);
  CHECK(column(header, "peak_phase") == header.size() - 2);
  CHECK(header.back() == "error");
  std::size_t rows = 0, oom_rows = 0;
  while (std::getline(csv, line)) {
    const auto row = cells(line);
    const auto& point = doc["points"][rows];
    ++rows;
    INFO(line);
    const std::string peak = row[column(header, "peak_phase")];
    CHECK(peak == point["result"]["breaking_phase"]);
    CHECK(row[column(header, "breaking_phase")] == peak);
    // The ledger of the same point peaks in the same phase.
    const std::string design = point["values"]["design"];
    const int experts = point["values"]["architecture.moe.num_experts"];
    const auto run = test::run_ledger(test::fig8(design, experts));
    CHECK(peak == name_of(run.ledger.stages[run.ledger.worst_stage].peak_phase));
    if (row[column(header, "oom")] == "true") {
      ++oom_rows;
      // DDP at N=128: the rebuild buffers on top of a persistent state larger than the device.
      CHECK(design == "ddp");
      CHECK(experts == 128);
      CHECK(peak == "weight_rebuild");
    }
  }
  CHECK(rows == 4);
  CHECK(oom_rows == 1);
}
