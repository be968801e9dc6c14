// nccl-tests logs -> one moesim-measurements/1 document (see nccl_tests_import.hpp). nccl-tests
// prints one average time per size, so each measurement's times_us holds that one value; the
// bandwidths are copied as printed (nccl-tests doc/PERFORMANCE.md: algbw = size / time,
// busbw = algbw x the collective's factor).
#include <filesystem>
#include <map>

#include "calibrate/fit/nccl_tests_import.hpp"
#include "models/common/errors.hpp"

namespace moesim::fit {

namespace {

// One sweep per test (and per table, should a test print its header twice).
std::string label_for(const NcclTestsLog& log, int table) {
  // Appended piece by piece: gcc 12 warns (-Wrestrict, a false positive) on literal + string.
  std::string label = "nccl-tests:";
  label += std::filesystem::path(log.file).filename().string();
  if (log.tests > 1) {
    label += "#";
    label += std::to_string(log.test);
  }
  if (table > 0) {
    label += ".";
    label += std::to_string(table + 1);
  }
  return label;
}

nlohmann::ordered_json record(const NcclTestsLog& log, const NcclTestsRow& row) {
  nlohmann::ordered_json r;
  r["kind"] = log.kind;
  r["group"] = "nccl-tests";
  r["label"] = label_for(log, row.table);
  r["dtype"] = row.dtype;
  r["group_size"] = log.ranks;
  r["nodes"] = std::max<std::size_t>(1, log.hosts.size());
  if (log.iters >= 0) r["iters"] = log.iters;
  if (log.warmup >= 0) r["warmup"] = log.warmup;
  r["times_us"] = nlohmann::ordered_json::array({row.time_us});
  r["median_us"] = row.time_us;
  r["bytes"] = row.bytes;
  r["count"] = row.count;
  if (!row.redop.empty()) r["op"] = row.redop;
  r["algbw_GBps"] = row.algbw_GBps;
  r["busbw_GBps"] = row.busbw_GBps;
  r["in_place"] = false;
  r["check"] = row.check;
  if (row.wrong >= 0) r["check_mismatches"] = row.wrong;
  if (!log.algorithm.empty()) r["algorithm"] = log.algorithm;
  r["source"] = log.file + ":" + std::to_string(row.line);
  return r;
}

}  // namespace

nlohmann::ordered_json nccl_tests_document(const std::vector<NcclTestsLog>& logs,
                                           const std::vector<std::string>& command_line) {
  if (logs.empty()) throw InputError("", "", "no nccl-tests logs given");
  // One device type per document: a profile describes one node type.
  const NcclTestsLog* widest = &logs.front();
  for (const auto& log : logs) {
    if (!log.device_name.empty() && !widest->device_name.empty() && log.device_name != widest->device_name) {
      throw InputError(log.file, "",
                       "device \"" + log.device_name + "\" differs from \"" + widest->device_name + "\" in " +
                           widest->file + ": import logs of one node type at a time");
    }
    if (log.ranks > widest->ranks || (widest->device_name.empty() && !log.device_name.empty())) widest = &log;
  }
  nlohmann::ordered_json doc;
  doc["schema"] = "moesim-measurements/1";
  nlohmann::ordered_json sources = nlohmann::ordered_json::array();
  for (const auto& log : logs) {
    sources.push_back({{"file", log.file},
                       {"test", log.test},
                       {"first_line", log.first_line},
                       {"kind", log.kind},
                       {"kind_from", log.kind_from},
                       {"group_size", log.ranks},
                       {"nodes", std::max<std::size_t>(1, log.hosts.size())},
                       {"rows", log.rows.size()},
                       {"nccl_tests_version", log.tests_version},
                       {"nccl_version", log.nccl_version.empty() ? "unknown" : log.nccl_version},
                       {"nccl_headers", log.nccl_headers.empty() ? "unknown" : log.nccl_headers},
                       {"algorithm", log.algorithm.empty() ? "unknown" : log.algorithm}});
  }
  doc["tool"] = {{"name", "moesim import nccl-tests"},
                 {"version", "0.1.0"},
                 {"command_line", command_line},
                 {"source_logs", sources}};
  doc["status"] = "complete";
  doc["error"] = nullptr;
  nlohmann::ordered_json env;
  env["hostname"] = widest->hosts.empty() ? "" : widest->hosts.front();
  env["date_utc"] = "unknown";  // nccl-tests logs carry no date; never invent one
  env["nccl_version"] = widest->nccl_version.empty() ? "unknown" : widest->nccl_version;
  env["gpu_count"] = widest->ranks;
  env["node_count"] = std::max<std::size_t>(1, widest->hosts.size());
  env["device"] = widest->devices.empty() ? nlohmann::ordered_json(nullptr) : widest->devices.front();
  env["devices"] = widest->devices;
  doc["environment"] = env;
  doc["shapes"] = nlohmann::ordered_json::object();
  doc["budget"] = nlohmann::ordered_json::object();
  nlohmann::ordered_json ms = nlohmann::ordered_json::array();
  for (const auto& log : logs) {
    for (const auto& row : log.rows) ms.push_back(record(log, row));
  }
  doc["measurements"] = ms;
  return doc;
}

}  // namespace moesim::fit
