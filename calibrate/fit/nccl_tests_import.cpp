// Parser of nccl-tests logs (nccl_tests_import.hpp): one NcclTestsLog per test in the file.
#include "calibrate/fit/nccl_tests_import.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "calibrate/fit/nccl_tests_collective.hpp"
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

bool is_number(const std::string& s) {
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return !s.empty() && end != s.c_str() && *end == '\0';
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

// Half a unit of the last printed digit: the rounding bound of a printed bandwidth.
double rounding_of(const std::string& printed) {
  const auto dot = printed.find('.');
  const auto decimals = dot == std::string::npos ? 0 : static_cast<int>(printed.size() - dot - 1);
  return 0.5 * std::pow(10.0, -decimals);
}

std::string normalise_algorithm(std::string a) {
  std::transform(a.begin(), a.end(), a.begin(), [](unsigned char c) { return std::tolower(c); });
  if (a == "nvlstree") return "nvls_tree";
  return (a == "ring" || a == "tree" || a == "nvls") ? a : "";  // a list or an exclusion: unknown
}

struct Header {
  bool active = false;
  int time_col = 0, type_col = 2, redop_col = -1, root_col = -1;
  bool wrong_count = true;  // "#wrong" (a count) or the old "error"/"res" (the largest deviation)
  double time_scale = 1.0;  // to microseconds
};

// One test being read: its log plus what is only known at its end.
struct Section {
  NcclTestsLog log;
  NamedCollectives banners, mentioned;
  std::map<int, std::string> rank_hosts;
  int nranks_info = 0;
  bool concluded = false;  // its table's footer was read
  int out_of_bounds = -1;  // the footer's "Out of bounds values : N"
  std::map<std::string, std::int64_t> last_size;
};

// Finishes a test: check verdicts, group size (or the previous test's) and hosts.
void finish(Section& s, const NcclTestsLog* previous, const NcclTestsOptions& opts) {
  NcclTestsLog& log = s.log;
  for (auto& row : log.rows) {
    // Old `error` columns print a deviation; nccl-tests' own verdict on it is the table footer.
    if (row.check.empty()) row.check = s.out_of_bounds == 0 ? "ok" : s.out_of_bounds > 0 ? "failed" : "skipped";
  }
  log.ranks = !s.rank_hosts.empty() ? static_cast<int>(s.rank_hosts.size()) : s.nranks_info;
  for (const auto& [rank, host] : s.rank_hosts) {
    if (std::find(log.hosts.begin(), log.hosts.end(), host) == log.hosts.end()) log.hosts.push_back(host);
  }
  if (s.rank_hosts.empty() && previous && opts.ranks == 0 && previous->ranks > 0) {
    log.ranks = previous->ranks, log.hosts = previous->hosts, log.devices = previous->devices;
    log.device_name = previous->device_name;
    log.notes.push_back(log.file + ":" + std::to_string(log.first_line) + ": no rank lines; ranks and devices " +
                        "taken from the test before it in the file");
  }
  if (log.nccl_version.empty() && previous) log.nccl_version = previous->nccl_version;
  if (opts.ranks > 0) {
    if (log.ranks > 0 && log.ranks != opts.ranks && !s.rank_hosts.empty()) {
      throw InputError(
          log.file, "",
          "the log lists " + std::to_string(log.ranks) + " ranks but --ranks is " + std::to_string(opts.ranks));
    }
    log.ranks = opts.ranks;
  }
  if (log.ranks < 1) {
    throw InputError(log.file, "",
                     "cannot tell the group size: no '# Using devices' rank lines and no 'nranks N'; pass --ranks");
  }
  if (!opts.algorithm.empty()) log.algorithm = opts.algorithm;
}

}  // namespace

std::string nccl_version_text(long code) {
  const long major = code >= 10000 ? code / 10000 : code / 1000;  // nccl.h NCCL_VERSION()
  const long minor = code >= 10000 ? code % 10000 / 100 : code % 1000 / 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(code % 100);
}

std::vector<NcclTestsLog> parse_nccl_tests_log(const std::string& text, const std::string& file,
                                               const NcclTestsOptions& opts) {
  // mpirun --tag-output ("[1,0]<stdout>:") and srun --label ("0: ") prefixes.
  static const std::regex prefix(R"(^(\[\d+,\d+\]<std(out|err)>:|\s*\d+: ))");
  static const std::regex rank_line(
      R"(^#\s*Rank\s+(\d+)\s.*?\bon\s+(\S+)\s+device\s+(\d+)\s+\[([^\]]*)\]\s+(.+?)\s*$)");
  static const std::regex iters_re(R"(warmup iters:\s*(\d+)\s+iters:\s*(\d+))");
  static const std::regex algo_re(R"(NCCL_ALGO set by environment to\s+(\S+))");
  static const std::regex nranks_re(R"(\bnranks\s+(\d+))");
  static const std::regex version_re(R"(NCCL version\s+(\S+))");
  static const std::regex tests_version_re(
      R"(nccl-tests version\s+(\S+)(?:\s+nccl-headers=(\d{1,9}))?(?:\s+nccl-library=(\d{1,9}))?)");
  static const std::regex out_of_bounds_re(R"(Out of bounds values\s*:\s*(\d+))");
  std::vector<Section> done;
  Section cur;
  cur.log.file = file;
  Header h;
  auto start_test = [&](int ln) {
    if (cur.log.rows.empty()) return;
    finish(cur, done.empty() ? nullptr : &done.back().log, opts);
    done.push_back(std::move(cur));
    cur = Section{};
    cur.log.file = file;
    cur.log.first_line = ln;
    h = Header{};
  };
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
      const auto t = tokens(s.substr(1));
      const bool header =
          t.size() >= 6 && (t[0] == "size" || t[0] == "bytes") && (t[1] == "count" || t[1] == "N") && t[2] == "type";
      const bool rank = std::regex_match(s, m, rank_line);
      // A test starts with its version line, banner, parameters, devices or table header.
      if (header || rank || s.find("Collective test starting:") != std::string::npos ||
          s.find("nccl-tests version") != std::string::npos || s.find("nThread") != std::string::npos ||
          s.find("Using devices") != std::string::npos) {
        start_test(ln);
      }
      NcclTestsLog& log = cur.log;
      if (rank) {
        const int r = small_int(m[1], "rank", file, ln);
        cur.rank_hosts[r] = m[2];
        if (log.device_name.empty()) log.device_name = m[5];
        log.devices.push_back({{"index", r},
                               {"name", m[5].str()},
                               {"host", m[2].str()},
                               {"device", small_int(m[3], "device", file, ln)},
                               {"pci_bus_id", m[4].str()}});
      }
      if (auto p = s.find("Collective test starting:"); p != std::string::npos) cur.banners.add(s.substr(p));
      if (std::regex_search(s, m, tests_version_re)) {
        log.tests_version = m[1];
        if (m[2].matched) log.nccl_headers = nccl_version_text(small_int(m[2], "nccl-headers", file, ln));
        if (m[3].matched) log.nccl_library = nccl_version_text(small_int(m[3], "nccl-library", file, ln));
        if (log.nccl_version.empty()) log.nccl_version = log.nccl_library;
      }
      if (std::regex_search(s, m, iters_re)) {
        log.warmup = small_int(m[1], "warmup iterations", file, ln);
        log.iters = small_int(m[2], "iterations", file, ln);
      }
      if (header) {
        const auto time_it =
            std::find_if(t.begin(), t.end(), [](const auto& x) { return x == "time" || x == "cputime"; });
        if (time_it == t.end() || t.end() - time_it < 4) fail_at(file, ln, "table header has no \"time\" column");
        h = Header{true, static_cast<int>(time_it - t.begin()), 2, -1, -1, time_it[3] == "#wrong", 1.0};
        for (auto c = t.begin() + 3; c != time_it; ++c) {
          if (*c == "redop" || *c == "op") h.redop_col = static_cast<int>(c - t.begin());
          if (*c == "root") h.root_col = static_cast<int>(c - t.begin());
        }
        log.layout.redop_column = h.redop_col >= 0;
        log.layout.root_column = h.root_col >= 0;
        ++log.tables;
      } else if (h.active && s.find("(elements)") != std::string::npos) {
        if (s.find("(ms)") != std::string::npos) h.time_scale = 1e3;
      } else if (s.find("Avg bus bandwidth") != std::string::npos ||
                 s.find("Out of bounds values") != std::string::npos ||
                 s.find("Collective test concluded") != std::string::npos) {
        if (std::regex_search(s, m, out_of_bounds_re)) cur.out_of_bounds = small_int(m[1], "out of bounds", file, ln);
        h.active = false;
        cur.concluded = true;
      }
      cur.mentioned.add(s);
      continue;
    }
    const bool info = std::regex_search(s, version_re) || std::regex_search(s, algo_re);
    if (info && cur.concluded) start_test(ln);  // NCCL's init lines of the next test
    NcclTestsLog& log = cur.log;
    if (std::regex_search(s, m, version_re)) log.nccl_version = m[1];
    if (std::regex_search(s, m, algo_re)) log.algorithm = normalise_algorithm(m[1]);
    if (std::regex_search(s, m, nranks_re) && !cur.concluded) {
      cur.nranks_info = std::max(cur.nranks_info, small_int(m[1], "nranks", file, ln));
    }
    const auto t = tokens(s);
    if (!h.active || !all_digits(t[0])) {
      cur.mentioned.add(s);
      continue;
    }
    NcclTestsRow row;
    row.line = ln;
    row.table = log.tables - 1;
    // alltoall before 2.13 printed its redop column blank: the row then has one column less.
    const int shift = h.redop_col >= 0 && static_cast<int>(t.size()) > h.redop_col && is_number(t[h.redop_col]);
    const auto c = static_cast<std::size_t>(h.time_col - shift);
    if (t.size() < c + 4) {
      fail_at(file, ln,
              "table row has " + std::to_string(t.size()) + " columns; expected at least " + std::to_string(c + 4) +
                  " (size, count, type, ..., time, algbw, busbw, #wrong)");
    }
    row.bytes = count_at(t, 0, "size in bytes", file, ln);
    row.count = count_at(t, 1, "count", file, ln);
    row.dtype = dtype_of(t[h.type_col]);
    if (row.dtype.empty()) fail_at(file, ln, "unknown data type \"" + t[h.type_col] + "\" in column 3");
    if (shift) log.layout.redop_blank = true;
    if (h.redop_col >= 0 && !shift && t[h.redop_col] != "none") row.redop = t[h.redop_col];
    if (h.root_col >= 0) {
      const auto at = static_cast<std::size_t>(h.root_col - shift);
      if (t[at] != "-1") row.root = count_at(t, at, "root", file, ln);
    }
    row.time_us = number_at(t, c, "out-of-place time", file, ln) * h.time_scale;
    row.algbw_GBps = number_at(t, c + 1, "out-of-place algbw", file, ln);
    row.busbw_GBps = number_at(t, c + 2, "out-of-place busbw", file, ln);
    row.bw_precision = std::max(rounding_of(t[c + 1]), rounding_of(t[c + 2]));
    if (t[c + 3] == "N/A") {
      row.check = "skipped";
    } else if (h.wrong_count) {
      row.wrong = count_at(t, c + 3, "#wrong", file, ln);
      row.check = row.wrong == 0 ? "ok" : "failed";
    } else if (number_at(t, c + 3, "error", file, ln) == 0) {
      row.check = "ok";
    }  // else: a deviation, judged by the footer (finish)
    if (row.root >= 0) {
      fail_at(file, ln,
              "root " + std::to_string(row.root) + ": a rooted collective (broadcast_perf or reduce_perf); moesim " +
                  "imports all_reduce, all_gather, reduce_scatter, alltoall and sendrecv");
    }
    if (row.bytes == 0) continue;  // nccl-tests -b 0 prints an empty operation: nothing to fit
    if (row.time_us <= 0) fail_at(file, ln, "out-of-place time must be positive");
    const std::string key = std::to_string(row.table) + "|" + row.dtype + "|" + row.redop;
    if (auto it = cur.last_size.find(key); it != cur.last_size.end() && row.bytes <= it->second) {
      fail_at(file, ln,
              "size " + std::to_string(row.bytes) + " does not increase (previous row: " + std::to_string(it->second) +
                  ")");
    }
    cur.last_size[key] = row.bytes;
    log.rows.push_back(row);
  }
  start_test(0);
  if (done.empty()) {
    throw InputError(file, "",
                     "no nccl-tests result rows: expected a '#  size  count  type ...' header followed by rows");
  }
  std::vector<NcclTestsLog> logs;
  for (auto& section : done) {
    section.log.test = static_cast<int>(logs.size()) + 1;
    section.log.tests = static_cast<int>(done.size());
    resolve_collective(section.log, section.banners, section.mentioned, opts);
    logs.push_back(std::move(section.log));
  }
  return logs;
}

std::vector<NcclTestsLog> read_nccl_tests_log(const std::string& path, const NcclTestsOptions& opts) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "cannot open file");
  std::stringstream buf;
  buf << in.rdbuf();
  return parse_nccl_tests_log(buf.str(), path, opts);
}

}  // namespace moesim::fit
