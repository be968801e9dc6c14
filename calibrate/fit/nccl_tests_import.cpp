// Parser of nccl-tests logs and their conversion to moesim-measurements/1 (nccl_tests_import.hpp).
#include "calibrate/fit/nccl_tests_import.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "models/common/errors.hpp"

namespace moesim::fit {

namespace {

[[noreturn]] void fail_at(const std::string& file, int line, const std::string& message) {
  throw InputError(file + ":" + std::to_string(line), "", message);
}

std::vector<std::string> tokens(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string t; in >> t;) out.push_back(t);
  return out;
}

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

// nccl-tests type names (its -d option) -> moesim dtype names.
std::string dtype_of(const std::string& t) {
  static const std::map<std::string, std::string> names = {
      {"float", "fp32"},  {"half", "fp16"},     {"bfloat16", "bf16"},   {"double", "fp64"},
      {"int8", "int8"},   {"uint8", "uint8"},   {"int32", "int32"},     {"uint32", "uint32"},
      {"int64", "int64"}, {"uint64", "uint64"}, {"f8e4m3", "fp8_e4m3"}, {"f8e5m2", "fp8_e5m2"}};
  auto it = names.find(t);
  return it == names.end() ? "" : it->second;
}

// "all_reduce_perf", "alltoall_perf_mpi", ... -> the measurement kind.
std::string kind_of_binary(const std::string& stem) {
  if (stem == "all_reduce") return "all_reduce";
  if (stem == "all_gather") return "all_gather";
  if (stem == "reduce_scatter") return "reduce_scatter";
  if (stem == "alltoall") return "all_to_all";
  return "send_recv";  // sendrecv
}

const std::regex kBinary(R"((all_reduce|all_gather|reduce_scatter|alltoall|sendrecv)_perf)");

std::set<std::string> binaries_in(const std::string& s) {
  std::set<std::string> out;
  for (auto it = std::sregex_iterator(s.begin(), s.end(), kBinary); it != std::sregex_iterator(); ++it) {
    out.insert(kind_of_binary((*it)[1].str()));
  }
  return out;
}

double number_at(const std::vector<std::string>& t, std::size_t i, const std::string& what, const std::string& file,
                 int line) {
  char* end = nullptr;
  const double v = i < t.size() ? std::strtod(t[i].c_str(), &end) : NAN;
  if (i >= t.size() || end == t[i].c_str() || *end != '\0' || !std::isfinite(v) || v < 0) {
    fail_at(file, line,
            "column " + std::to_string(i + 1) + " (" + what + "): expected a non-negative number, got \"" +
                (i < t.size() ? t[i] : std::string("<missing>")) + "\"");
  }
  return v;
}

// A count column (size, count, #wrong): a whole number that fits the integer it is stored in.
std::int64_t count_at(const std::vector<std::string>& t, std::size_t i, const std::string& what,
                      const std::string& file, int line) {
  const double v = number_at(t, i, what, file, line);
  constexpr double kExact = 9007199254740992.0;  // 2^53: every integer below is a double exactly
  if (v != std::floor(v) || v > kExact) {
    fail_at(file, line,
            "column " + std::to_string(i + 1) + " (" + what + "): expected a whole number up to 2^53, got \"" + t[i] +
                "\"");
  }
  return static_cast<std::int64_t>(v);
}

// A number from a header line (ranks, devices, iterations): digits that fit an int.
int small_int(const std::string& digits, const std::string& what, const std::string& file, int line) {
  if (digits.size() > 9) fail_at(file, line, what + " " + digits + " is out of range");
  return std::stoi(digits);
}

std::string normalise_algorithm(std::string a) {
  std::transform(a.begin(), a.end(), a.begin(), [](unsigned char c) { return std::tolower(c); });
  if (a == "nvlstree") return "nvls_tree";
  return (a == "ring" || a == "tree" || a == "nvls") ? a : "";  // a list or an exclusion: unknown
}

struct Header {
  bool active = false;
  int time_col = 0, type_col = 2, redop_col = -1;
  double time_scale = 1.0;  // to microseconds
};

}  // namespace

NcclTestsLog parse_nccl_tests_log(const std::string& text, const std::string& file, const NcclTestsOptions& opts) {
  NcclTestsLog log;
  log.file = file;
  static const std::regex prefix(R"(^\[\d+,\d+\]<std(out|err)>:)");
  static const std::regex rank_line(
      R"(^#\s*Rank\s+(\d+)\s.*?\bon\s+(\S+)\s+device\s+(\d+)\s+\[([^\]]*)\]\s+(.+?)\s*$)");
  static const std::regex iters_re(R"(warmup iters:\s*(\d+)\s+iters:\s*(\d+))");
  static const std::regex algo_re(R"(NCCL_ALGO set by environment to\s+(\S+))");
  static const std::regex nranks_re(R"(\bnranks\s+(\d+))");
  static const std::regex version_re(R"(NCCL version\s+(\S+))");
  static const std::regex tests_version_re(R"(nccl-tests version\s+(\S+))");
  std::set<std::string> banners, mentioned;
  std::map<int, std::string> rank_hosts;
  int nranks_info = 0;
  Header h;
  std::map<std::string, std::int64_t> last_size;  // per "table|type|redop"
  std::istringstream in(text);
  std::string raw;
  for (int ln = 1; std::getline(in, raw); ++ln) {
    std::string s = std::regex_replace(raw, prefix, "");
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
    const auto first = s.find_first_not_of(" \t");
    if (first == std::string::npos) continue;
    s = s.substr(first);
    std::smatch m;
    if (s.rfind("#", 0) == 0) {
      if (auto p = s.find("Collective test starting:"); p != std::string::npos) {
        const auto b = binaries_in(s.substr(p));
        banners.insert(b.begin(), b.end());
      }
      if (std::regex_search(s, m, tests_version_re)) log.tests_version = m[1];
      if (std::regex_search(s, m, iters_re)) {
        log.warmup = small_int(m[1], "warmup iterations", file, ln);
        log.iters = small_int(m[2], "iterations", file, ln);
      }
      if (std::regex_match(s, m, rank_line)) {
        const int rank = small_int(m[1], "rank", file, ln);
        rank_hosts[rank] = m[2];
        if (log.device_name.empty()) log.device_name = m[5];
        log.devices.push_back({{"index", rank},
                               {"name", m[5].str()},
                               {"host", m[2].str()},
                               {"device", small_int(m[3], "device", file, ln)},
                               {"pci_bus_id", m[4].str()}});
      }
      const auto t = tokens(s.substr(1));
      if (t.size() >= 6 && t[0] == "size" && t[1] == "count" && t[2] == "type") {
        const auto time_it = std::find(t.begin(), t.end(), "time");
        if (time_it == t.end()) fail_at(file, ln, "table header has no \"time\" column");
        if (!h.active) ++log.tables;
        h = Header{true, static_cast<int>(time_it - t.begin()), 2, -1, 1.0};
        if (auto r = std::find(t.begin(), time_it, "redop"); r != time_it)
          h.redop_col = static_cast<int>(r - t.begin());
      } else if (h.active && s.find("(elements)") != std::string::npos) {
        if (s.find("(ms)") != std::string::npos) h.time_scale = 1e3;
      } else if (s.find("Avg bus bandwidth") != std::string::npos ||
                 s.find("Out of bounds values") != std::string::npos) {
        h.active = false;
      }
    } else {
      if (std::regex_search(s, m, version_re) && log.nccl_version.empty()) log.nccl_version = m[1];
      if (std::regex_search(s, m, algo_re)) log.algorithm = normalise_algorithm(m[1]);
      if (std::regex_search(s, m, nranks_re)) nranks_info = std::max(nranks_info, small_int(m[1], "nranks", file, ln));
      const auto t = tokens(s);
      if (h.active && all_digits(t[0])) {
        NcclTestsRow row;
        row.line = ln;
        row.table = log.tables - 1;
        if (t.size() < static_cast<std::size_t>(h.time_col + 4)) {
          fail_at(file, ln,
                  "table row has " + std::to_string(t.size()) + " columns; expected at least " +
                      std::to_string(h.time_col + 4) + " (size, count, type, ..., time, algbw, busbw, #wrong)");
        }
        row.bytes = count_at(t, 0, "size in bytes", file, ln);
        row.count = count_at(t, 1, "count", file, ln);
        row.dtype = dtype_of(t[h.type_col]);
        if (row.dtype.empty()) fail_at(file, ln, "unknown data type \"" + t[h.type_col] + "\" in column 3");
        if (h.redop_col >= 0 && t[h.redop_col] != "none") row.redop = t[h.redop_col];
        const auto c = static_cast<std::size_t>(h.time_col);
        row.time_us = number_at(t, c, "out-of-place time", file, ln) * h.time_scale;
        row.algbw_GBps = number_at(t, c + 1, "out-of-place algbw", file, ln);
        row.busbw_GBps = number_at(t, c + 2, "out-of-place busbw", file, ln);
        if (t[c + 3] != "N/A") row.wrong = count_at(t, c + 3, "#wrong", file, ln);
        if (row.bytes == 0) continue;  // nccl-tests -b 0 prints an empty operation: nothing to fit
        if (row.time_us <= 0) fail_at(file, ln, "out-of-place time must be positive");
        const std::string key = std::to_string(row.table) + "|" + row.dtype + "|" + row.redop;
        if (auto it = last_size.find(key); it != last_size.end() && row.bytes <= it->second) {
          fail_at(file, ln,
                  "size " + std::to_string(row.bytes) +
                      " does not increase (previous row: " + std::to_string(it->second) + ")");
        }
        last_size[key] = row.bytes;
        log.rows.push_back(row);
        continue;
      }
    }
    const auto b = binaries_in(s);
    mentioned.insert(b.begin(), b.end());
  }
  if (log.rows.empty()) {
    throw InputError(file, "",
                     "no nccl-tests result rows: expected a '#  size  count  type ...' header followed by rows");
  }
  // Which collective: --kind, else the banner, else the binary named in the log, else the file name.
  auto one_of = [&](const std::set<std::string>& found, const char* how) {
    if (found.size() > 1) {
      std::string list;
      for (const auto& k : found) list += (list.empty() ? "" : ", ") + k;
      throw InputError(
          file, "",
          std::string("the log's ") + how + "s name several collectives (" + list + "): split the log or pass --kind");
    }
    if (!found.empty() && log.kind.empty()) {
      log.kind = *found.begin();
      log.kind_from = how;
    }
  };
  one_of(banners, "banner");
  one_of(mentioned, "binary name");
  if (log.kind.empty()) one_of(binaries_in(std::filesystem::path(file).filename().string()), "file name");
  if (!opts.kind.empty()) {
    if (!log.kind.empty() && log.kind != opts.kind && log.kind_from == "banner") {
      throw InputError(file, "", "the log's banner says " + log.kind + " but --kind is " + opts.kind);
    }
    log.kind = opts.kind;
    log.kind_from = "--kind";
  }
  if (log.kind.empty()) {
    throw InputError(file, "",
                     "cannot tell which collective this log measured (no banner, no *_perf name); pass --kind");
  }
  log.ranks = !rank_hosts.empty() ? static_cast<int>(rank_hosts.size()) : nranks_info;
  if (opts.ranks > 0) {
    if (log.ranks > 0 && log.ranks != opts.ranks) {
      throw InputError(
          file, "",
          "the log lists " + std::to_string(log.ranks) + " ranks but --ranks is " + std::to_string(opts.ranks));
    }
    log.ranks = opts.ranks;
  }
  if (log.ranks < 1) {
    throw InputError(file, "",
                     "cannot tell the group size: no '# Using devices' rank lines and no 'nranks N'; pass --ranks");
  }
  for (const auto& [rank, host] : rank_hosts) {
    if (std::find(log.hosts.begin(), log.hosts.end(), host) == log.hosts.end()) log.hosts.push_back(host);
  }
  if (!opts.algorithm.empty()) log.algorithm = opts.algorithm;
  return log;
}

NcclTestsLog read_nccl_tests_log(const std::string& path, const NcclTestsOptions& opts) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "cannot open file");
  std::stringstream buf;
  buf << in.rdbuf();
  return parse_nccl_tests_log(buf.str(), path, opts);
}

}  // namespace moesim::fit
