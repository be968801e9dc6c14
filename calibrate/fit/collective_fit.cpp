#include "calibrate/fit/collective_fit.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include "calibrate/fit/least_squares.hpp"
#include "models/common/errors.hpp"
#include "models/costs/collective_model.hpp"

namespace moesim::fit {

namespace {

struct Curve {
  std::string kind, algorithm;  // algorithm "" = unknown
  bool assumed = false;         // the algorithm was not recorded with the measurement
  bool picked = false;          // ... and is the cost model's pick on the base profile
  int n = 0, domains = 1;
  std::vector<double> bytes, times;
  std::set<std::string> files;
  LineFit fit;
  double algbw = 0, busbw = 0;  // GB/s
  std::string error;
  CurveReport* report = nullptr;
  std::string name() const {
    return kind + " " + (algorithm.empty() ? "?" : algorithm) + (assumed ? "*" : "") + " n=" + std::to_string(n) +
           (domains > 1 ? " (" + std::to_string(domains) + " domains)" : "");
  }
};

// Points of a size sweep; single named sizes (FSDP units, buckets, routed cases) are left out.
bool sweep_label(const std::string& l) {
  return l == "sweep" || l == "uniform" || l.rfind("pair:", 0) == 0 || l.rfind("nccl-tests", 0) == 0;
}

int domains_of(const Measurement& m, const HardwareProfile& hw) {
  const int domain = static_cast<int>(hw.interconnect.intra_node.domain_gpus.value);
  int d = (m.group_size + domain - 1) / domain;
  // On HGX a host is an NVLink domain: a group spread over several hosts spans that many.
  if (domain == static_cast<int>(hw.node.gpus_per_node.value)) d = std::max(d, m.nodes);
  return d;
}

// The recorded algorithm, else --all-reduce-algorithm for all_reduce; "" = not recorded.
std::pair<std::string, bool> algorithm_of(const Measurement& m, const FitInputs& in) {
  if (m.kind == "all_to_all" || m.kind == "send_recv") return {"p2p", false};  // NCCL send/recv
  if (!m.algorithm.empty()) return {m.algorithm, false};
  if (m.kind == "all_reduce" && !in.options.all_reduce_algorithm.empty()) {
    return {in.options.all_reduce_algorithm, true};
  }
  return {"", true};
}

// What the cost model runs the curve's largest size with on the base profile. An unrecorded
// algorithm is NCCL's own choice, which the model stands for: fitting that algorithm's fields is
// what makes the fitted profile reproduce the measurement ("" when the model cannot run it).
std::string model_pick(const HardwareProfile& hw, const std::string& kind, int n, int domains, double bytes) {
  CollectiveRequest req;
  req.kind = parse_collective_kind(kind);
  req.bytes = bytes;
  req.ranks = n;
  req.ranks_per_node = n % domains == 0 ? n / domains : 0;
  try {
    return collective_models().get(kDefaultCollectiveModel).cost(hw, req).algorithm;
  } catch (const InputError&) {
    return "";
  }
}

// kMinPlausibleFraction (fitted_fields.hpp) of the link: PCIe Gen4/Gen5 x16 (32/64 GB/s) is
// 0.07/0.14 of NVLink 4's 450 GB/s, so traffic under it did not run on the profile's NVLink.
constexpr double kMinPlausibleEfficiency = kMinPlausibleFraction;

// Pipeline steps the model charges hop_latency_us for inside one domain
// (models/costs/collective_algorithms.cpp: ring 2(n-1) or n-1, tree 2(r-1), p2p 1, NVLS none).
int intra_steps(const Curve& c) {
  if (c.algorithm == "ring") return c.kind == "all_reduce" ? 2 * (c.n - 1) : c.n - 1;
  if (c.algorithm == "tree") return 2 * (c.n - 1);
  if (c.algorithm == "p2p") return 1;
  return 0;
}

bool intra_field_exists(const std::string& alg, const std::string& kind) {
  if (alg == "ring") return kind == "all_reduce" || kind == "all_gather" || kind == "reduce_scatter";
  if (alg == "tree") return kind == "all_reduce";
  if (alg == "nvls") return kind == "all_reduce" || kind == "all_gather" || kind == "reduce_scatter";
  if (alg == "p2p") return kind == "all_to_all" || kind == "send_recv";
  return false;
}

int ceil_log2(int m) { return m <= 1 ? 0 : static_cast<int>(std::ceil(std::log2(m))); }

std::string fit_text(const Curve& c) {
  const std::string how =
      c.fit.bandwidth_points == 0
          ? "one relative least-squares line over every row"
          : "bandwidth from the " + std::to_string(c.fit.bandwidth_points) + " bandwidth-bound rows, latency from " +
                (c.fit.latency_points > 0
                     ? "the median over the " + std::to_string(c.fit.latency_points) + " latency-bound rows"
                     : std::string("every row with the bandwidth fixed")) +
                " (calibrate/fit/least_squares.hpp)";
  return "time = " + sig4(c.fit.intercept) + " us + bytes / " + sig4(c.algbw) + " GB/s (" + how +
         (c.fit.intercept_clamped ? ", intercept clamped to 0" : "") + "); busbw = algbw x " +
         "the nccl-tests factor (doc/PERFORMANCE.md) = " + sig4(c.busbw) + " GB/s; at the largest size " +
         sig4(c.report->largest_bytes) + " B the busbw is " + sig4(c.report->largest_busbw_measured) +
         " GB/s measured, " + sig4(c.report->largest_busbw_fitted) + " GB/s fitted";
}

// The largest size: where training's buckets live, so where the fit must be right.
void describe_largest(Curve& c) {
  const auto i = static_cast<std::size_t>(std::max_element(c.bytes.begin(), c.bytes.end()) - c.bytes.begin());
  const double factor = busbw_factor(parse_collective_kind(c.kind), c.n);
  CurveReport& r = *c.report;
  r.kind = c.kind, r.algorithm = c.algorithm, r.ranks = c.n, r.domains = c.domains;
  r.algorithm_recorded = !c.picked;  // named by the measurements or --all-reduce-algorithm
  r.largest_bytes = c.bytes[i];
  r.largest_time_us = c.times[i];
  r.largest_busbw_measured = c.bytes[i] / c.times[i] * 1e-3 * factor;  // bytes per us -> GB/s
  r.largest_busbw_fitted = c.bytes[i] / (c.fit.intercept + c.fit.slope * c.bytes[i]) * 1e-3 * factor;
}

std::string assumed_text(const Curve& c) {
  return c.assumed ? "; algorithm not recorded with the measurements, taken as " + c.algorithm : "";
}

void append(std::string& s, const std::string& more) { s += (s.empty() ? "" : ", ") + more; }

}  // namespace

FitOutput fit_collectives(const FitInputs& in) {
  const HardwareProfile& hw = in.base;
  std::map<std::string, Curve> curves;
  for (const auto& f : in.files) {
    for (const auto& m : f.measurements) {
      if (!is_collective_kind(m.kind) || m.kind == "all_reduce_bucketed" || !sweep_label(m.label)) continue;
      if (m.check == "failed" || m.group_size < 2) continue;
      const int domains = domains_of(m, hw);
      const auto [alg, assumed] = algorithm_of(m, in);
      const std::string key = m.kind + "|" + alg + "|" + std::to_string(m.group_size) + "|" + std::to_string(domains);
      Curve& c = curves[key];
      c.kind = m.kind, c.algorithm = alg, c.assumed = assumed, c.n = m.group_size, c.domains = domains;
      c.bytes.push_back(static_cast<double>(m.bytes));
      c.times.push_back(m.median_us);
      c.files.insert(f.file);
    }
  }
  for (auto& [key, c] : curves) {
    if (!c.algorithm.empty()) continue;
    c.algorithm = model_pick(hw, c.kind, c.n, c.domains, *std::max_element(c.bytes.begin(), c.bytes.end()));
    c.picked = true;
  }
  FitOutput out;
  out.curves.reserve(curves.size());
  const double nvl = hw.node.nvlink_bw_GBps_per_direction.value;
  std::map<std::string, Curve*> winners;  // intra-node efficiency field -> its curve
  for (auto& [key, c] : curves) {
    out.curves.push_back({});
    c.report = &out.curves.back();
    c.report->curve = c.name();
    c.report->points = static_cast<int>(c.bytes.size());
    try {
      c.fit = fit_latency_bandwidth(c.bytes, c.times);
    } catch (const std::invalid_argument& e) {
      c.report->note = std::string("not fitted: ") + e.what();
      continue;
    }
    c.algbw = 1e-3 / c.fit.slope;                                          // bytes per us -> GB/s
    c.busbw = c.algbw * busbw_factor(parse_collective_kind(c.kind), c.n);  // nccl-tests PERFORMANCE.md
    c.report->model = sig4(c.fit.intercept) + " us + S / " + sig4(c.algbw) + " GB/s (busbw " + sig4(c.busbw) + ")";
    c.report->rms_rel = c.fit.rms_rel;
    c.report->max_rel = c.fit.max_rel;
    describe_largest(c);
    if (c.picked) c.report->note = "algorithm not recorded: the cost model's pick";
    if (c.assumed && !c.picked) c.report->note = "algorithm assumed";
    const double eff = c.busbw / nvl;
    if (c.algorithm.empty()) {
      c.report->note =
          "not mapped: the cost model cannot run it (pass --all-reduce-algorithm, or import with "
          "--algorithm)";
    } else if (c.domains == 1 && !intra_field_exists(c.algorithm, c.kind)) {
      c.report->note = "not mapped: the profile has no " + c.algorithm + " efficiency for " + c.kind;
    } else if (c.domains == 1 && eff > (c.algorithm == "nvls" ? 2.0 : 1.0)) {
      c.report->note = "not mapped: busbw above the NVLink rate for " + c.algorithm + " (was NVLS in use?)";
    } else if (c.domains == 1 && eff < kMinPlausibleEfficiency) {
      c.report->note = "not mapped: efficiency " + sig4(eff) + " is under " + sig4(kMinPlausibleEfficiency) +
                       " of the profile's NVLink rate";
      out.warnings.push_back(c.name() + ": fitted busbw " + sig4(c.busbw) + " GB/s is " + sig4(eff) + " of the " +
                             sig4(nvl) + " GB/s NVLink rate of " + hw.name +
                             ": implausible for that link (another GPU or fabric, or no large sizes); not written");
    } else if (c.domains == 1) {
      const std::string field = c.algorithm + "." + c.kind;
      auto [it, fresh] = winners.emplace(field, &c);
      if (!fresh && it->second->n < c.n) {  // the largest group (a full domain) represents the node
        it->second->report->note = "superseded by n=" + std::to_string(c.n);
        it->second = &c;
      } else if (!fresh) {
        c.report->note = "superseded by n=" + std::to_string(it->second->n);
      }
    }
  }
  // Inside one domain: efficiency = busbw / NVLink rate; base latency = intercept - steps x hop.
  const double hop = hw.interconnect.intra_node.hop_latency_us.value;
  std::map<std::string, std::vector<Curve*>> by_algorithm;
  for (auto& [field, c] : winners) {
    const double eff = c->busbw / nvl;  // hardware_profiles/README.md: busbw efficiency
    const std::string source = "moesim fit: " + c->kind + " " + c->algorithm + " over " + std::to_string(c->n) +
                               " ranks in one NVLink domain; " + fit_text(*c) + " / nvlink_bw_GBps_per_direction " +
                               sig4(nvl) + assumed_text(*c) + "; " +
                               residual_text(c->fit.rms_rel, c->fit.max_rel, c->fit.points) +
                               "; measurements: " + in.provenance(c->files);
    out.updates.push_back({{"interconnect", "intra_node", c->algorithm, "busbw_efficiency", c->kind},
                           fitted_quantity(eff, source),
                           sig4(round_sig4(eff))});
    append(c->report->field, "intra_node." + c->algorithm + ".busbw_efficiency." + c->kind);
    by_algorithm[c->algorithm].push_back(c);
  }
  std::map<std::string, double> new_base;
  for (auto& [alg, cs] : by_algorithm) {
    std::vector<double> values;
    std::set<std::string> files;
    std::string what;
    double worst_rms = 0, worst_max = 0;
    int points = 0;
    for (Curve* c : cs) {
      const double v = c->fit.intercept - intra_steps(*c) * hop;  // collective_algorithms.cpp latency
      values.push_back(std::max(0.0, v));
      files.insert(c->files.begin(), c->files.end());
      append(what, c->kind + " " + sig4(c->fit.intercept) + " us - " + std::to_string(intra_steps(*c)) + " x " +
                       sig4(hop) + " us" + (v < 0 ? " (negative, taken as 0)" : ""));
      if (v < 0) {  // the profile's hop latency alone exceeds the measured intercept
        append(c->report->note, "intercept below " + std::to_string(intra_steps(*c)) +
                                    " x hop_latency_us: base latency 0, " + "small messages over-predicted by " +
                                    sig4(-v) + " us");
      }
      worst_rms = std::max(worst_rms, c->fit.rms_rel), worst_max = std::max(worst_max, c->fit.max_rel);
      points += c->fit.points;
      append(c->report->field, "intra_node." + alg + ".base_latency_us");
    }
    new_base[alg] = median_of(values);
    const std::string source = "moesim fit: median over curves of intercept - pipeline steps x hop_latency_us, " +
                               std::string("the model's latency (models/costs/collective_algorithms.cpp): ") + what +
                               "; " + residual_text(worst_rms, worst_max, points) + " (worst curve)" +
                               "; measurements: " + in.provenance(files);
    out.updates.push_back({{"interconnect", "intra_node", alg, "base_latency_us"},
                           fitted_quantity(new_base[alg], source),
                           sig4(round_sig4(new_base[alg])) + " us"});
  }
  // Across domains: the NIC share of the model's bytes over the fitted time, and the intercept
  // less the intra-domain latency, per network hop.
  const double line = hw.node.nic_bw_Gbps_per_gpu.value / 8.0;  // Gb/s -> GB/s
  auto base_of = [&](const std::string& alg, const CollectiveAlgorithmSpec& spec) {
    return new_base.count(alg) ? new_base[alg] : spec.base_latency_us.value;
  };
  std::vector<double> nics, hops;
  std::set<std::string> files;
  std::string what;
  double worst_rms = 0, worst_max = 0;
  int points = 0;
  for (auto& [key, c] : curves) {
    if (c.domains < 2 || c.algbw <= 0 || c.algorithm.empty()) continue;
    const int m = c.domains, n = c.n;
    if (n % m != 0) {
      c.report->note = "not mapped: ranks do not split evenly over domains";
      continue;
    }
    const double r = static_cast<double>(n) / m;
    const auto& ic = hw.interconnect.intra_node;
    double nic = 0, net_hop = 0;
    if (c.algorithm == "ring" && c.kind != "all_to_all" && c.kind != "send_recv") {
      nic = c.busbw / (r * line);  // ring: each rank's NIC carries busbw-bytes / r
      const int steps = c.kind == "all_reduce" ? 2 * (n - 1) : n - 1,
                inter = c.kind == "all_reduce" ? 2 * (m - 1) : m - 1;
      // ring latency = base + (steps - inter) x NVLink hop + inter x network hop
      net_hop = (c.fit.intercept - base_of("ring", ic.ring) - (steps - inter) * hop) / inter;
    } else if ((c.algorithm == "tree" || c.algorithm == "nvls_tree") && c.kind == "all_reduce") {
      nic = 2.0 * (m - 1) / m * c.algbw / r / line;  // double binary tree: 2(m-1)/m of S / r per rail
      const double intra = c.algorithm == "tree" ? base_of("tree", ic.tree) + 2 * (r - 1) * hop
                                                 : (ic.nvls ? base_of("nvls", *ic.nvls) : 0.0);
      net_hop = (c.fit.intercept - intra) / (2 * ceil_log2(m));  // tree: + 2 log2(m) network hops
    } else if (c.algorithm == "p2p") {
      nic = (c.kind == "all_to_all" ? (n - r) / n : 1.0) * c.algbw / line;  // off-domain share on its own rail
      net_hop = c.fit.intercept - base_of("p2p", ic.p2p);                   // p2p: base + one network hop
    } else {
      c.report->note = "not mapped: no inter-node formula for " + c.algorithm + " " + c.kind;
      continue;
    }
    if (!(nic > 0 && nic <= 1)) {
      c.report->note = "not mapped: NIC efficiency " + sig4(nic) + " outside (0, 1]: not NIC-bound as modelled";
      continue;
    }
    if (nic < kMinPlausibleEfficiency) {
      c.report->note = "not mapped: NIC efficiency " + sig4(nic) + " under " + sig4(kMinPlausibleEfficiency);
      out.warnings.push_back(c.name() + ": NIC efficiency " + sig4(nic) + " of the " + sig4(line) + " GB/s rail of " +
                             hw.name +
                             ": implausible for that NIC (another network path, e.g. TCP sockets); not written");
      continue;
    }
    nics.push_back(nic);
    hops.push_back(std::max(0.0, net_hop));
    files.insert(c.files.begin(), c.files.end());
    append(what, c.name() + ": NIC " + sig4(nic) + ", hop " + sig4(net_hop) + " us");
    worst_rms = std::max(worst_rms, c.fit.rms_rel), worst_max = std::max(worst_max, c.fit.max_rel);
    points += c.fit.points;
    c.report->field = "inter_node.nic_efficiency, inter_node.hop_latency_us";
  }
  if (!nics.empty()) {
    const std::string tail =
        "; " + residual_text(worst_rms, worst_max, points) + " (worst curve); measurements: " + in.provenance(files);
    out.updates.push_back(
        {{"interconnect", "inter_node", "nic_efficiency"},
         fitted_quantity(median_of(nics),
                         "moesim fit: median over inter-domain curves of the NIC " +
                             std::string("share of the bytes the model sends per rail / fitted time / ") + sig4(line) +
                             " GB/s line rate (models/costs/collective_algorithms.cpp): " + what + tail),
         sig4(round_sig4(median_of(nics)))});
    out.updates.push_back(
        {{"interconnect", "inter_node", "hop_latency_us"},
         fitted_quantity(median_of(hops),
                         "moesim fit: median over inter-domain curves of (intercept - " +
                             std::string("intra-domain latency) / network steps, the model's latency ") +
                             "(models/costs/collective_algorithms.cpp): " + what + tail),
         sig4(round_sig4(median_of(hops))) + " us"});
  }
  return out;
}

}  // namespace moesim::fit
