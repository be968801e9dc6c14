// Which collective an nccl-tests test measured (nccl_tests_collective.hpp). The column facts are
// nccl-tests' own (src/*.cu GetCollByteCount and GetBw, src/common.cu and src/util.cu headers):
// - all_reduce and sendrecv print count = size / type size; all_gather, reduce_scatter and
//   alltoall print the per-rank count, size / (ranks x type size);
// - busbw = algbw x 2(n-1)/n for all_reduce, (n-1)/n for all_gather, reduce_scatter and alltoall
//   (all_gather and reduce_scatter used 1 before nccl-tests commit ec1b5e2, June 2020), 1 for
//   sendrecv;
// - the redop column holds an operation for all_reduce, reduce_scatter and sendrecv and "none"
//   for all_gather and alltoall; before 2.13's common header, all_gather and sendrecv printed no
//   redop column and alltoall left it blank.
#include "calibrate/fit/nccl_tests_collective.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <regex>

#include "models/common/errors.hpp"

namespace moesim::fit {

namespace {

const std::set<std::string> kAll = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv"};

std::string join(const std::set<std::string>& s, const std::string& last_sep) {
  std::string out;
  std::size_t i = 0;
  for (const auto& k : s) out += (i++ == 0 ? "" : i == s.size() ? last_sep : ", ") + k;
  return out;
}

std::set<std::string> intersect(const std::set<std::string>& a, const std::set<std::string>& b) {
  std::set<std::string> out;
  for (const auto& k : a) {
    if (b.count(k)) out.insert(k);
  }
  return out;
}

// Bytes per element of the moesim dtype names the importer produces.
double element_bytes(const std::string& dtype) {
  static const std::map<std::string, double> sizes = {{"fp32", 4},  {"fp16", 2},   {"bf16", 2},     {"fp64", 8},
                                                      {"int8", 1},  {"uint8", 1},  {"int32", 4},    {"uint32", 4},
                                                      {"int64", 8}, {"uint64", 8}, {"fp8_e4m3", 1}, {"fp8_e5m2", 1}};
  return sizes.at(dtype);
}

struct Evidence {
  std::set<std::string> kinds = kAll;
  std::string text;
  void narrow(const std::set<std::string>& fits, const std::string& what) {
    kinds = intersect(kinds, fits);
    text += (text.empty() ? "" : ", ") + what;
  }
};

// The collectives the columns allow. Every clue comes from the table itself.
Evidence from_columns(const NcclTestsLog& log) {
  Evidence e;
  const auto& lay = log.layout;
  if (!lay.redop_column) {
    e.narrow({"all_gather", "send_recv"}, "no redop column");
  } else if (lay.redop_blank) {
    e.narrow({"all_to_all"}, "redop column blank");
  } else {
    std::set<std::string> ops;
    for (const auto& r : log.rows) ops.insert(r.redop.empty() ? "none" : r.redop);
    const bool none = ops.count("none") > 0;
    if (ops.size() == 1) {
      e.narrow(none ? std::set<std::string>{"all_gather", "all_to_all"}
                    : std::set<std::string>{"all_reduce", "reduce_scatter", "send_recv"},
               "redop " + *ops.begin());
    }
  }
  // The largest row has the most exact bandwidth columns.
  const NcclTestsRow* big = nullptr;
  for (const auto& r : log.rows) {
    if (r.count > 0 && (!big || r.algbw_GBps > big->algbw_GBps)) big = &r;
  }
  if (!big) return e;
  const double n = log.ranks, elements = static_cast<double>(big->count) * element_bytes(big->dtype);
  const double per_count = static_cast<double>(big->bytes) / elements;
  if (per_count == 1) {
    e.narrow({"all_reduce", "send_recv"}, "size = count x type size");
  } else if (n > 1 && per_count == n) {
    e.narrow({"all_gather", "reduce_scatter", "all_to_all"}, "size = ranks x count x type size");
  }
  if (n < 2 || big->algbw_GBps <= 0) return e;
  const double ratio = big->busbw_GBps / big->algbw_GBps;
  const std::map<std::string, std::vector<double>> factors = {{"all_reduce", {2 * (n - 1) / n}},
                                                              {"all_gather", {(n - 1) / n, 1.0}},
                                                              {"reduce_scatter", {(n - 1) / n, 1.0}},
                                                              {"all_to_all", {(n - 1) / n}},
                                                              {"send_recv", {1.0}}};
  std::set<std::string> fits;
  for (const auto& [kind, fs] : factors) {
    for (double f : fs) {
      // Both columns are rounded to their last printed digit.
      if (std::fabs(ratio - f) <= big->bw_precision * (1 + f) / big->algbw_GBps + 1e-12) fits.insert(kind);
    }
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "busbw = %.4g x algbw", ratio);
  e.narrow(fits, buf);
  return e;
}

std::string kind_in_file_name(const std::string& file) {
  std::string name = std::filesystem::path(file).filename().string();
  for (auto& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  static const std::regex names(R"((all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|send_?recv)(?![a-z]))");
  std::set<std::string> found;
  for (auto it = std::sregex_iterator(name.begin(), name.end(), names); it != std::sregex_iterator(); ++it) {
    std::string k = (*it)[1].str();
    k.erase(std::remove(k.begin(), k.end(), '_'), k.end());
    found.insert(k == "allreduce"       ? "all_reduce"
                 : k == "allgather"     ? "all_gather"
                 : k == "reducescatter" ? "reduce_scatter"
                 : k == "alltoall"      ? "all_to_all"
                                        : "send_recv");
  }
  return found.size() == 1 ? *found.begin() : "";
}

std::string kind_of_binary(const std::string& stem) {
  if (stem == "alltoall") return "all_to_all";
  if (stem == "sendrecv") return "send_recv";
  return stem;  // all_reduce, all_gather, reduce_scatter
}

}  // namespace

void NamedCollectives::add(const std::string& text) {
  static const std::regex binary(R"((all_reduce|all_gather|reduce_scatter|alltoallv|alltoall|sendrecv|)"
                                 R"(broadcast|reduce|gather|scatter|hypercube)_perf)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), binary); it != std::sregex_iterator(); ++it) {
    const std::string stem = (*it)[1].str();
    const bool ours = stem == "all_reduce" || stem == "all_gather" || stem == "reduce_scatter" || stem == "alltoall" ||
                      stem == "sendrecv";
    if (ours) {
      kinds.insert(kind_of_binary(stem));
    } else {
      unsupported.insert(stem + "_perf");
    }
  }
}

void resolve_collective(NcclTestsLog& log, const NamedCollectives& banners, const NamedCollectives& mentioned,
                        const NcclTestsOptions& opts) {
  std::string where = log.file;
  if (log.tests > 1) where += " (test " + std::to_string(log.test) + " of " + std::to_string(log.tests) + ")";
  const std::string at = log.file + ":" + std::to_string(log.first_line);
  const Evidence cols = from_columns(log);
  const std::string columns =
      "its columns (" + cols.text + ") fit " +
      (cols.kinds.empty() ? std::string("no collective moesim imports") : join(cols.kinds, " or "));
  auto conflict = [&](const std::string& kind, const std::string& how) {
    throw InputError(at, "",
                     "the " + how + " says " + kind + " but " + columns + "; pass --kind " + kind +
                         " to import it as " + kind + " anyway");
  };
  if (!banners.unsupported.empty()) {
    throw InputError(at, "",
                     "the banner names " + join(banners.unsupported, " and ") + "; moesim imports all_reduce_perf, " +
                         "all_gather_perf, reduce_scatter_perf, alltoall_perf and sendrecv_perf");
  }
  if (banners.kinds.size() > 1) {
    throw InputError(at, "",
                     "the log's banners name several collectives (" + join(banners.kinds, ", ") +
                         ") in one test: split the log or pass --kind");
  }
  const std::string banner = banners.kinds.empty() ? "" : *banners.kinds.begin();
  auto set = [&](const std::string& kind, const std::string& from) {
    log.kind = kind;
    log.kind_from = from;
  };
  if (!opts.kind.empty()) {
    if (!banner.empty() && banner != opts.kind) {
      throw InputError(at, "", "the log's banner says " + banner + " but --kind is " + opts.kind);
    }
    set(opts.kind, "--kind");
    if (!cols.kinds.empty() && !cols.kinds.count(opts.kind)) {
      log.notes.push_back(where + ": " + columns + "; imported as " + opts.kind + " as --kind says");
    }
    return;
  }
  if (!banner.empty()) {
    set(banner, "banner");
    if (!cols.kinds.empty() && !cols.kinds.count(banner)) {
      log.notes.push_back(where + ": " + columns + "; imported as " + banner + " as its banner says");
    }
    return;
  }
  // A binary name in the log (an echoed command line), then the file name, each checked against
  // the columns; a name the columns rule out is more likely a stray mention than the collective.
  const auto named = intersect(mentioned.kinds, cols.kinds.empty() ? kAll : cols.kinds);
  if (mentioned.kinds.size() == 1 && named.empty()) conflict(*mentioned.kinds.begin(), "binary name in the log");
  if (named.size() == 1)
    return set(*named.begin(), mentioned.kinds.size() == 1 ? "binary name" : "binary name + columns");
  const std::string from_name = kind_in_file_name(log.file);
  if (!from_name.empty()) {
    if (!cols.kinds.empty() && !cols.kinds.count(from_name)) conflict(from_name, "file name");
    return set(from_name, "file name");
  }
  if (cols.kinds.size() == 1) return set(*cols.kinds.begin(), "columns: " + cols.text);
  const std::set<std::string> options = cols.kinds.empty() ? kAll : cols.kinds;
  throw InputError(at, "",
                   "cannot tell which collective " + where +
                       " measured: no '# Collective test starting:' banner, no single *_perf name in the log, and "
                       "the file name names none; " +
                       columns + "; pass --kind " + join(options, " or --kind "));
}

}  // namespace moesim::fit
