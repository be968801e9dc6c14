// Import of nccl-tests text output (all_reduce_perf, all_gather_perf, reduce_scatter_perf,
// alltoall_perf, sendrecv_perf) into a moesim-measurements/1 document: one measurement per
// size, its time the out-of-place time, its `source` the log line. Format facts: the nccl-tests
// README and doc/PERFORMANCE.md (columns size, count, type, redop, root, then time, algbw,
// busbw, #wrong out of place and again in place; "# Using devices" lists one line per rank).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace moesim::fit {

struct NcclTestsOptions {
  std::string kind;       // "" = detect from the banner, the binary name in the log, or the file name
  int ranks = 0;          // 0 = from the "# Using devices" rank lines (or NCCL's "nranks N")
  std::string algorithm;  // "" = from "NCCL_ALGO set by environment to X" when the log has it
};

struct NcclTestsRow {
  int line = 0;   // 1-based line in the log
  int table = 0;  // 0-based: a new table starts at every header after a summary
  std::int64_t bytes = 0, count = 0;
  std::string dtype;  // moesim name (fp32, bf16, ...)
  std::string redop;  // "" for non-reductions
  double time_us = 0, algbw_GBps = 0, busbw_GBps = 0;
  std::int64_t wrong = -1;  // -1: "N/A" (validation off)
};

struct NcclTestsLog {
  std::string file;
  std::string kind;       // measurement kind: all_reduce, all_gather, reduce_scatter, all_to_all, send_recv
  std::string kind_from;  // how the kind was found: "--kind", "banner", "binary name", "file name"
  int ranks = 0;
  std::vector<std::string> hosts;  // distinct, in rank order
  std::string device_name;
  std::vector<nlohmann::ordered_json> devices;  // one per rank line
  std::string nccl_version, tests_version, algorithm;
  int iters = -1, warmup = -1;  // -1: not in the log
  int tables = 0;
  std::vector<NcclTestsRow> rows;
};

// Throws InputError("FILE:LINE", ...) for a malformed log.
NcclTestsLog parse_nccl_tests_log(const std::string& text, const std::string& file, const NcclTestsOptions& opts);
NcclTestsLog read_nccl_tests_log(const std::string& path, const NcclTestsOptions& opts);

// The measurements document for `logs` (validated by the caller with parse_measurements).
nlohmann::ordered_json nccl_tests_document(const std::vector<NcclTestsLog>& logs,
                                           const std::vector<std::string>& command_line);

}  // namespace moesim::fit
