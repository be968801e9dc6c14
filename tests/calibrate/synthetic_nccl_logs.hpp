// nccl-tests logs written from known parameters, in the layouts nccl-tests printed over its
// history (src/common.cu, src/util.cu, src/*.cu print_header): for the importer and fitter
// tests. Never calibration data, and no copy of a real log.
#pragma once

#include <string>

namespace moesim::test {

struct SyntheticNcclLog {
  std::string binary = "all_reduce_perf";  // all_gather_perf, reduce_scatter_perf, alltoall_perf, sendrecv_perf
  // "current": nccl-tests >= 2.13 (size count type redop root ... #wrong for every test, version
  // line, banner); "2020": the per-test leading columns of 2019-2022 (no redop column for
  // all_gather and sendrecv, a blank one for alltoall) and the `error` deviation column.
  std::string layout = "current";
  bool banner = true;         // "# Collective test starting:" and the version line (current only)
  bool command_line = false;  // an echoed "$ mpirun ... ./BINARY" line
  std::string prefix;         // e.g. "[1,0]<stdout>:" (mpirun --tag-output)
  int ranks = 8, hosts = 1;
  std::string device = "NVIDIA H200";
  std::string nccl_algo;                         // "" or e.g. "Ring": an NCCL INFO line
  std::string nccl_version = "2.21.5+cuda12.4";  // "" = no NCCL INFO version line
  int nccl_library_code = 22105;                 // nccl-library= of the current layout's version line
  double min_bytes = 8, max_bytes = 8.0 * (1ull << 30);
  // time = latency + bytes / algbw (NCCL's Simple protocol); with ll_latency_us > 0 the row takes
  // the faster of that and ll_latency_us + bytes / (ll busbw), as NCCL's LL protocol does.
  double latency_us = 30, busbw_GBps = 360;
  double ll_latency_us = 0, ll_busbw_GBps = 0;
  std::string error_value = "0e+00";  // the 2020 layout's deviation column
  bool failed_footer = false;         // "Out of bounds values : 1 FAILED"
};

std::string synthetic_nccl_log(const SyntheticNcclLog& spec);
// The truth the rows were made from, for one size.
double synthetic_nccl_time_us(const SyntheticNcclLog& spec, double bytes);

}  // namespace moesim::test
