#include "tests/calibrate/synthetic_nccl_logs.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace moesim::test {

namespace {

// nccl-tests' bus-bandwidth factor per test (doc/PERFORMANCE.md).
double factor(const std::string& binary, int n) {
  if (binary == "all_reduce_perf") return 2.0 * (n - 1) / n;
  if (binary == "sendrecv_perf") return 1.0;
  return (n - 1.0) / n;
}

bool reduces(const std::string& binary) {
  return binary == "all_reduce_perf" || binary == "reduce_scatter_perf" || binary == "sendrecv_perf";
}

bool per_rank_count(const std::string& binary) {
  return binary == "all_gather_perf" || binary == "reduce_scatter_perf" || binary == "alltoall_perf";
}

// nccl-tests' time format: 2 decimals under 100 us, 1 under 10 ms, none above (src/common.cu).
std::string time_text(double us) {
  char buf[32];
  std::snprintf(buf, sizeof buf, us < 100 ? "%7.2f" : us < 10000 ? "%7.1f" : "%7.0f", us);
  return buf;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace

double synthetic_nccl_time_us(const SyntheticNcclLog& s, double bytes) {
  const double f = factor(s.binary, s.ranks);
  const double simple = s.latency_us + bytes * f / (s.busbw_GBps * 1e3);
  if (s.ll_latency_us <= 0) return simple;
  return std::min(simple, s.ll_latency_us + bytes * f / (s.ll_busbw_GBps * 1e3));
}

std::string synthetic_nccl_log(const SyntheticNcclLog& s) {
  std::ostringstream out;
  const std::string p = s.prefix;
  const bool current = s.layout == "current";
  if (s.command_line) out << "$ mpirun -np " << s.ranks << " ./build/" << s.binary << " -b 8 -e 8G -f 2 -g 1\n";
  if (current && s.banner) {
    out << p << "# nccl-tests version 2.17.1 nccl-headers=" << s.nccl_library_code
        << " nccl-library=" << s.nccl_library_code << "\n";
    out << p << "# Collective test starting: " << s.binary << "\n";
  }
  out << p << "# nThread 1 nGpus 1 minBytes " << static_cast<long long>(s.min_bytes) << " maxBytes "
      << static_cast<long long>(s.max_bytes) << " step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1"
      << (current ? " graph: 0" : "") << "\n";
  out << p << "#\n" << p << "# Using devices\n";
  const int per_host = s.ranks / s.hosts;
  for (int r = 0; r < s.ranks; ++r) {
    char line[256];
    const std::string host = "synth-" + std::to_string(r / per_host);
    if (current) {
      std::snprintf(line, sizeof line, "#  Rank %2d Group  0 Pid %6d on %10s device %2d [%04x:%02x:00] %s\n", r,
                    1000 + r, host.c_str(), r % per_host, 0, 16 + r % per_host, s.device.c_str());
    } else {
      std::snprintf(line, sizeof line, "#   Rank %2d Pid %6d on %10s device %2d [0x%02x] %s\n", r, 1000 + r,
                    host.c_str(), r % per_host, 16 + r % per_host, s.device.c_str());
    }
    out << p << line;
  }
  if (!s.nccl_version.empty()) out << p << "synth-0:1000:1000 [0] NCCL INFO NCCL version " << s.nccl_version << "\n";
  if (!s.nccl_algo.empty())
    out << p << "synth-0:1000:1000 [0] NCCL INFO NCCL_ALGO set by environment to " << s.nccl_algo << "\n";
  // Leading columns: current: all five; 2020: per test.
  const bool redop =
      current || s.binary == "all_reduce_perf" || s.binary == "reduce_scatter_perf" || s.binary == "alltoall_perf";
  const bool root = current;
  out << p << "#\n"
      << p << "#       size         count      type" << (redop ? "   redop" : "") << (root ? "    root" : "")
      << (current ? "     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
                  : "     time   algbw   busbw  error     time   algbw   busbw  error\n");
  out << p << "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)"
      << "  (GB/s)\n";
  const int n = s.ranks;
  const double bw_factor = factor(s.binary, n);
  double sum_busbw = 0;
  int rows = 0;
  for (double bytes = s.min_bytes; bytes <= s.max_bytes; bytes *= 2) {
    const long long count = static_cast<long long>(bytes / 4) / (per_rank_count(s.binary) ? n : 1);
    if (count == 0) continue;
    const double size = static_cast<double>(count) * 4 * (per_rank_count(s.binary) ? n : 1);
    const double t = synthetic_nccl_time_us(s, size);
    const double algbw = size / t * 1e-3, busbw = algbw * bw_factor;
    sum_busbw += busbw, ++rows;
    std::string lead = fmt("%12.0f", size) + "  " + fmt("%12.0f", static_cast<double>(count)) + "     float";
    if (redop)
      lead += current ? (reduces(s.binary) ? "     sum" : "    none") : (reduces(s.binary) ? "     sum" : "      ");
    if (root) lead += "      -1";
    const std::string check = current ? "      0" : "  " + s.error_value;
    const std::string body = "  " + time_text(t) + "  " + fmt("%6.2f", algbw) + "  " + fmt("%6.2f", busbw) + check;
    out << p << lead << body << body << "\n";
  }
  out << p << "# Out of bounds values : " << (s.failed_footer ? "1 FAILED" : "0 OK") << "\n";
  out << p << "# Avg bus bandwidth    : " << fmt("%g", rows ? sum_busbw / rows : 0) << " \n" << p << "#\n";
  if (current && s.banner) out << p << "# Collective test concluded: " << s.binary << "\n";
  return out.str();
}

}  // namespace moesim::test
