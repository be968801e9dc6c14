// Import of nccl-tests text output (all_reduce_perf, all_gather_perf, reduce_scatter_perf,
// alltoall_perf, sendrecv_perf) into a moesim-measurements/1 document: one measurement per
// size, its time the out-of-place time, its `source` the log line. Format facts: the nccl-tests
// README, doc/PERFORMANCE.md and src/common.cu / src/util.cu across its history (since 2.13 every
// test prints `size count type redop root`; before, each test printed its own leading columns:
// all_gather and sendrecv had no redop column, alltoall left it blank, and the check column was
// `error`, the largest deviation, instead of `#wrong`). One file may hold several tests run back to
// back: each is its own NcclTestsLog.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace moesim::fit {

struct NcclTestsOptions {
  std::string kind;       // "" = from the banner, a binary name in the log, the file name or the columns
  int ranks = 0;          // 0 = from the "# Using devices" rank lines (or NCCL's "nranks N")
  std::string algorithm;  // "" = from "NCCL_ALGO set by environment to X" when the log has it
};

struct NcclTestsRow {
  int line = 0;   // 1-based line in the log
  int table = 0;  // 0-based table within its test
  std::int64_t bytes = 0, count = 0;
  std::string dtype;       // moesim name (fp32, bf16, ...)
  std::string redop;       // "" for non-reductions ("none" or a blank column)
  std::int64_t root = -1;  // -1: no root (every collective moesim imports)
  double time_us = 0, algbw_GBps = 0, busbw_GBps = 0;
  double bw_precision = 0;  // half the last printed digit of algbw and busbw (rounding bound)
  std::int64_t wrong = -1;  // "#wrong" count; -1: "N/A" or an old-style `error` column
  std::string check;        // ok, failed, skipped (old `error` columns: nccl-tests' table verdict)
};

// What the header and the rows show about the collective (nccl_tests_collective.cpp reads it).
struct NcclTestsLayout {
  bool redop_column = false;  // the header names a redop (or old "op") column
  bool root_column = false;
  bool redop_blank = false;  // the header names redop but the rows leave it empty (alltoall 2020-2022)
};

struct NcclTestsLog {
  std::string file;
  int test = 1, tests = 1;  // this test's place among the tests run back to back in the file
  int first_line = 1;       // where this test's part of the file starts
  std::string kind;         // measurement kind: all_reduce, all_gather, reduce_scatter, all_to_all, send_recv
  std::string kind_from;    // how the kind was found: "--kind", "banner", "binary name", "file name", "columns: ..."
  int ranks = 0;
  std::vector<std::string> hosts;  // distinct, in rank order
  std::string device_name;
  std::vector<nlohmann::ordered_json> devices;  // one per rank line
  std::string nccl_version;                // NCCL's "NCCL version X" INFO line, else nccl-tests' nccl-library= code
  std::string nccl_library, nccl_headers;  // "# nccl-tests version V nccl-headers=H nccl-library=L", decoded
  std::string tests_version, algorithm;
  int iters = -1, warmup = -1;  // -1: not in the log
  int tables = 0;
  NcclTestsLayout layout;
  std::vector<NcclTestsRow> rows;
  std::vector<std::string> notes;  // what was assumed or overridden, for stderr
};

// Throws InputError("FILE:LINE", ...) for a malformed log, InputError(FILE, ...) when the
// collective or the group size cannot be told. One entry per test in the file, in file order.
std::vector<NcclTestsLog> parse_nccl_tests_log(const std::string& text, const std::string& file,
                                               const NcclTestsOptions& opts);
std::vector<NcclTestsLog> read_nccl_tests_log(const std::string& path, const NcclTestsOptions& opts);

// The measurements document for `logs` (validated by the caller with parse_measurements).
nlohmann::ordered_json nccl_tests_document(const std::vector<NcclTestsLog>& logs,
                                           const std::vector<std::string>& command_line);

// NCCL_VERSION_CODE as nccl-tests prints it (nccl.h: X*1000+Y*100+Z up to 2.8, X*10000+Y*100+Z
// after) -> "X.Y.Z".
std::string nccl_version_text(long code);

}  // namespace moesim::fit
