#include <algorithm>
#include <initializer_list>
#include <sstream>

#include "models/hw/profile_sections.hpp"

#include "models/costs/compute_costs.hpp"

namespace moesim::profile_detail {

namespace {
// Provenance fields shared by a quantity and a table: "kind" and a non-empty "source".
void provenance(const JsonReader& q, SourceKind& kind_out, std::string& source_out) {
  const auto kind = q.choice("kind", {"datasheet", "published", "fitted", "assumption"});
  kind_out = kind == "datasheet"   ? SourceKind::datasheet
             : kind == "published" ? SourceKind::published
             : kind == "fitted"    ? SourceKind::fitted
                                   : SourceKind::assumption;
  source_out = q.string("source");
  if (source_out.empty()) q.fail("source", "must say where the number comes from");
}

// The {"value", "kind", "source"} object of `key`. A bare value there (`"usable_capacity_GiB": 80`)
// is refused with where the number goes.
JsonReader sourced_object(const JsonReader& parent, std::string_view key) {
  try {
    return parent.object(key);
  } catch (const InputError& e) {
    const std::string path = parent.child_path(key);
    if (e.path() != path || !parent.has(key)) throw;
    throw InputError(e.file(), path,
                     e.message() +
                         "; every profile value carries its provenance: write {\"value\": ..., \"kind\": "
                         "\"datasheet|published|fitted|assumption\", \"source\": \"where it comes from\"} "
                         "(the value goes in " +
                         path + ".value)");
  }
}

// {"value": <one of `allowed`>, "kind", "source"}: a named setting with its provenance.
Sourced<std::string> sourced_choice(const JsonReader& parent, std::string_view key,
                                    std::initializer_list<std::string_view> allowed) {
  const JsonReader q = sourced_object(parent, key);
  Sourced<std::string> out;
  out.value = q.choice("value", allowed);
  provenance(q, out.kind, out.source);
  q.finish();
  return out;
}

Sourced<bool> sourced_flag(const JsonReader& parent, std::string_view key) {
  const JsonReader q = sourced_object(parent, key);
  Sourced<bool> out;
  out.value = q.boolean("value");
  provenance(q, out.kind, out.source);
  q.finish();
  return out;
}

}  // namespace

Quantity quantity(const JsonReader& parent, std::string_view key, Range range) {
  const JsonReader q = sourced_object(parent, key);
  Quantity out;
  out.value = q.number("value", range);
  provenance(q, out.kind, out.source);
  q.finish();
  return out;
}

std::optional<Quantity> optional_quantity(const JsonReader& parent, std::string_view key, Range range) {
  if (!parent.has(key)) return std::nullopt;
  return quantity(parent, key, range);
}

std::string implausible(double value, const PlausibleRange& plausible) {
  if (value >= plausible.min && value <= plausible.max) return "";
  std::ostringstream msg;
  msg << "value " << value << " " << plausible.unit << " is not plausible; allowed: [" << plausible.min << ", "
      << plausible.max << "] " << plausible.unit << " (" << plausible.reason << ")";
  return msg.str();
}

Quantity quantity(const JsonReader& parent, std::string_view key, const PlausibleRange& plausible) {
  Quantity out = quantity(parent, key, Range::non_negative());
  if (const std::string why = implausible(out.value, plausible); !why.empty()) parent.object(key).fail("value", why);
  return out;
}

std::optional<Quantity> optional_quantity(const JsonReader& parent, std::string_view key,
                                          const PlausibleRange& plausible) {
  if (!parent.has(key)) return std::nullopt;
  return quantity(parent, key, plausible);
}

ProfileTable table(const JsonReader& parent, std::string_view key, std::string_view x_key, std::string_view y_key,
                   Range y_range) {
  const JsonReader t = parent.object(key);
  ProfileTable out;
  provenance(t, out.kind, out.source);
  const auto points = t.object_list("points");
  if (points.empty()) t.fail("points", "a table needs at least one point");
  for (std::size_t i = 0; i < points.size(); ++i) {
    const JsonReader& p = points[i];
    TablePoint pt;
    pt.x = p.number(x_key, Range::positive());
    pt.y = p.number(y_key, y_range);
    if (i > 0 && pt.x <= out.points().back().x) {
      std::ostringstream msg;
      msg << "must be greater than the previous point's " << x_key << " (" << out.points().back().x
          << "): table rows are strictly increasing";
      p.fail(x_key, msg.str());
    }
    p.finish();
    out.add(pt);
  }
  t.finish();
  return out;
}

namespace {

// busbw / link rate: above 1 only where the switch reduces in-network (NVLS), so cap at 2.
const Range kEfficiency{0.0, 2.0, true};
// A backward pass over the forward rate: published ratios are 0.37-1.23; 1.5 catches
// percentages typed as fractions.
const Range kPassRatio{0.0, 1.5, true};

CollectiveEfficiencies efficiencies(const JsonReader& e, std::initializer_list<std::string_view> required,
                                    std::initializer_list<std::string_view> optional) {
  CollectiveEfficiencies out;
  auto slot = [&out](std::string_view k) -> std::optional<Quantity>& {
    if (k == "all_reduce") return out.all_reduce;
    if (k == "all_gather") return out.all_gather;
    if (k == "reduce_scatter") return out.reduce_scatter;
    if (k == "all_to_all") return out.all_to_all;
    if (k == "broadcast") return out.broadcast;
    return out.send_recv;
  };
  for (auto k : required) slot(k) = quantity(e, k, kEfficiency);
  for (auto k : optional) slot(k) = optional_quantity(e, k, kEfficiency);
  e.finish();
  return out;
}

CollectiveAlgorithmSpec algorithm(const JsonReader& a, std::initializer_list<std::string_view> required,
                                  std::initializer_list<std::string_view> optional) {
  CollectiveAlgorithmSpec out;
  out.base_latency_us = quantity(a, "base_latency_us", plausible::kLatencyUs);
  out.ctas = quantity(a, "ctas", kCtas);
  out.busbw_efficiency = efficiencies(a.object("busbw_efficiency"), required, optional);
  a.finish();
  return out;
}

// Each memory-kernel class as a fraction of the copy rate; copy itself is that rate.
void memory_kernel_fractions(const JsonReader& f, ComputeSpec& s) {
  s.hbm_fraction_by_kernel[static_cast<std::size_t>(MemoryKernel::copy)] = {
      1.0, s.hbm_sustained_GBps.kind, "by definition: compute.hbm_sustained_GBps is the copy rate"};
  const std::pair<MemoryKernel, const char*> classes[] = {{MemoryKernel::elementwise, "elementwise"},
                                                          {MemoryKernel::permute, "permute"},
                                                          {MemoryKernel::cross_entropy, "cross_entropy"},
                                                          {MemoryKernel::optimizer, "optimizer"}};
  for (const auto& [kind, key] : classes) {
    s.hbm_fraction_by_kernel[static_cast<std::size_t>(kind)] = quantity(f, key, Range{0.0, 1.0, true});
  }
  f.finish();
}

// FP8 over BF16 at one shape: 2 is the datasheets' peak ratio (B300: 4.5 over 2.25 PFLOP/s;
// H100: 1979 over 989 TFLOP/s dense). Achieved rates can go past it where BF16 runs further under
// its peak than FP8 (an H200, 2026-12-04: 2.1 at 16k rows, both near 0.7 of their peaks), so
// the range stops a typo or a sparse peak at 3; the check against gpu.peak_fp8_dense_TFLOPs
// (check_rates_under_peaks below) holds the physical limit.
std::optional<LowPrecisionGemmSpec> low_precision_gemm(const JsonReader& c, std::string_view key) {
  const auto g = c.optional_object(key);
  if (!g) return std::nullopt;
  const Range ratio{0.0, 3.0, true};
  LowPrecisionGemmSpec out;
  out.gemm_over_bf16_by_rows = table(*g, "gemm_over_bf16_by_rows", "rows", "ratio", ratio);
  out.grouped_gemm_over_bf16_by_rows_per_expert =
      table(*g, "grouped_gemm_over_bf16_by_rows_per_expert", "rows_per_expert", "ratio", ratio);
  g->finish();
  return out;
}

// compute.attention_kernel names the kernel attention_*_TFLOPs measure; attention_by_kernel
// holds other kernels' rates, keyed by kernel name.
void attention_kernels(const JsonReader& c, ComputeSpec& s) {
  s.attention_kernel = c.choice_of("attention_kernel", kAttentionKernelNames, AttentionKernel::profile);
  if (s.attention_kernel == AttentionKernel::unfused) {
    c.fail("attention_kernel",
           "\"unfused\" is priced from the GEMM table and HBM rates, not from attention rates; "
           "name the fused kernel the rates measure (cudnn, flash_attn_2, flash_attn_3, "
           "mem_efficient) or profile");
  }
  const auto by = c.optional_object("attention_by_kernel");
  if (!by) return;
  for (const auto& [kernel, name] : kAttentionKernelNames.entries()) {
    // "profile" is no kernel and "unfused" has no rates: unknown keys here.
    if (kernel == AttentionKernel::profile || kernel == AttentionKernel::unfused || !by->has(name)) continue;
    if (kernel == s.attention_kernel) {
      by->fail(name, "is the kernel compute.attention_fwd_TFLOPs and attention_bwd_TFLOPs already describe (" +
                         std::string(name) + "); list only other kernels here");
    }
    const auto k = by->object(name);
    s.attention_by_kernel.push_back(
        {kernel, quantity(k, "fwd_TFLOPs", Range::positive()), quantity(k, "bwd_TFLOPs", Range::positive())});
    k.finish();
  }
  by->finish();
}

}  // namespace

ComputeSpec parse_compute(const JsonReader& c) {
  ComputeSpec s;
  s.gemm_bf16_TFLOPs_by_rows = table(c, "gemm_bf16_TFLOPs_by_rows", "rows", "TFLOPs", Range::positive());
  // Published grouped/dense ratios are 0.59-0.96; up to 1.5 leaves room for a grouped kernel
  // that beats a poorly tuned dense one, while catching percentages typed as fractions.
  s.grouped_gemm_efficiency_by_rows_per_expert = table(c, "grouped_gemm_efficiency_by_rows_per_expert",
                                                       "rows_per_expert", "fraction_of_dense", Range{0.0, 1.5, true});
  s.gemm_dgrad_over_forward = quantity(c, "gemm_dgrad_over_forward", kPassRatio);
  s.gemm_wgrad_over_forward = quantity(c, "gemm_wgrad_over_forward", kPassRatio);
  s.grouped_gemm_dgrad_over_forward_by_rows_per_expert = table(c, "grouped_gemm_dgrad_over_forward_by_rows_per_expert",
                                                               "rows_per_expert", "fraction_of_forward", kPassRatio);
  s.grouped_gemm_wgrad_over_forward_by_rows_per_expert = table(c, "grouped_gemm_wgrad_over_forward_by_rows_per_expert",
                                                               "rows_per_expert", "fraction_of_forward", kPassRatio);
  s.gemm_power_limited_TFLOPs = optional_quantity(c, "gemm_power_limited_TFLOPs", Range::positive());
  s.attention_fwd_TFLOPs = quantity(c, "attention_fwd_TFLOPs", Range::positive());
  s.attention_bwd_TFLOPs = quantity(c, "attention_bwd_TFLOPs", Range::positive());
  for (auto [key, t] : {std::pair{"attention_fwd_TFLOPs_by_seq_len", &s.attention_fwd_TFLOPs_by_seq_len},
                        std::pair{"attention_bwd_TFLOPs_by_seq_len", &s.attention_bwd_TFLOPs_by_seq_len},
                        std::pair{"ssd_scan_fwd_TFLOPs_by_seq_len", &s.ssd_scan_fwd_TFLOPs_by_seq_len}}) {
    if (c.has(key)) *t = table(c, key, "seq_len", "TFLOPs", Range::positive());
  }
  attention_kernels(c, s);
  s.hbm_sustained_GBps = quantity(c, "hbm_sustained_GBps", plausible::kHbmGBps);
  memory_kernel_fractions(c.object("hbm_fraction_by_kernel"), s);
  // A per-kernel overhead of a millisecond or more would be a unit mistake (ms typed as us).
  s.kernel_launch_us = quantity(c, "kernel_launch_us", Range::between(0.0, 1000.0));
  if (c.has("gemm_TFLOPs_by_power_limit"))
    s.gemm_TFLOPs_by_power_limit = table(c, "gemm_TFLOPs_by_power_limit", "power_limit_W", "TFLOPs", Range::positive());
  s.fp8_gemm = low_precision_gemm(c, "fp8_gemm");
  s.mxfp8_gemm = low_precision_gemm(c, "mxfp8_gemm");
  for (auto [key, spec] :
       {std::pair{"fp8_attention", &s.fp8_attention}, std::pair{"mxfp8_attention", &s.mxfp8_attention}}) {
    const auto a = c.optional_object(key);
    if (!a) continue;
    *spec = LowPrecisionAttentionSpec{table(*a, "fwd_TFLOPs_by_seq_len", "seq_len", "TFLOPs", Range::positive()),
                                      table(*a, "bwd_TFLOPs_by_seq_len", "seq_len", "TFLOPs", Range::positive())};
    a->finish();
  }
  c.finish();
  return s;
}

InterconnectSpec parse_interconnect(const JsonReader& ic) {
  InterconnectSpec s;
  {
    const auto in = ic.object("intra_node");
    s.intra_node.domain_gpus = quantity(in, "domain_gpus", Range::between(1, 1024));
    s.intra_node.hop_latency_us = quantity(in, "hop_latency_us", plausible::kLatencyUs);
    // Which collectives each algorithm runs follows NCCL: ring the reductions, gathers and
    // broadcast, tree only all_reduce, NVLS all_reduce (its all_gather/reduce_scatter are
    // optional: no speedup, nccl issue 1506), point-to-point all_to_all and send/recv.
    s.intra_node.ring = algorithm(in.object("ring"), {"all_reduce", "all_gather", "reduce_scatter", "broadcast"}, {});
    s.intra_node.tree = algorithm(in.object("tree"), {"all_reduce"}, {});
    s.intra_node.p2p = algorithm(in.object("p2p"), {"all_to_all", "send_recv"}, {});
    if (const auto nvls = in.optional_object("nvls")) {
      s.intra_node.nvls = algorithm(*nvls, {"all_reduce"}, {"all_gather", "reduce_scatter"});
    }
    in.finish();
  }
  {
    const auto out = ic.object("inter_node");
    s.inter_node.hop_latency_us = quantity(out, "hop_latency_us", plausible::kLatencyUs);
    s.inter_node.nic_efficiency = quantity(out, "nic_efficiency", Range{0.0, 1.0, true});
    const auto fabric = sourced_choice(out, "fabric", {"rail_optimized", "fat_tree"});
    s.inter_node.fabric = {
        fabric.value == "rail_optimized" ? ScaleOutTopology::rail_optimized : ScaleOutTopology::fat_tree, fabric.kind,
        fabric.source};
    s.inter_node.spine_hop_latency_us = quantity(out, "spine_hop_latency_us", plausible::kLatencyUs);
    // A millisecond per peer would be a unit mistake (ms typed as us).
    s.inter_node.per_peer_latency_us = quantity(out, "per_peer_latency_us", Range::between(0.0, 1000.0));
    s.inter_node.pxn = sourced_flag(out, "pxn");
    out.finish();
  }
  if (const auto ep = ic.optional_object("ep_transports")) s.ep_transports = parse_ep_transports(*ep);
  ic.finish();
  return s;
}
// No kernel runs faster than the GPU's nominal peak or streams faster than its HBM: a profile
// that says otherwise has a typo (a peak in the wrong unit, a rate from another GPU), and would
// give an MFU above 100%.
void check_rates_under_peaks(const HardwareProfile& h, const JsonReader& in) {
  const auto compute = in.object("compute");
  const double peak = h.gpu.peak_bf16_TFLOPs.value;
  const std::string ceiling =
      " TFLOP/s exceeds the GPU's nominal peak (gpu.peak_bf16_dense_TFLOPs " + brief(peak) + ")";
  // A table of TFLOP/s stays under a peak (`above`: the message past it), point by point.
  const auto under = [&](const ProfileTable& t, const std::string& key, double limit, const std::string& above) {
    for (std::size_t i = 0; i < t.points().size(); ++i) {
      if (t.points()[i].y > limit)
        throw InputError(in.file(), compute.child_path(key) + ".points[" + std::to_string(i) + "].TFLOPs",
                         brief(t.points()[i].y) + above);
    }
  };
  const auto under_peak = [&](const ProfileTable& t, const char* key) { under(t, key, peak, ceiling); };
  under_peak(h.compute.gemm_bf16_TFLOPs_by_rows, "gemm_bf16_TFLOPs_by_rows");
  const auto max_of = [](const ProfileTable& t) {
    double out = 0;
    for (const auto& p : t.points()) out = std::max(out, p.y);
    return out;
  };
  const double best_dense = max_of(h.compute.gemm_bf16_TFLOPs_by_rows);
  const std::pair<const char*, double> dense_passes[] = {
      {"gemm_dgrad_over_forward", h.compute.gemm_dgrad_over_forward.value},
      {"gemm_wgrad_over_forward", h.compute.gemm_wgrad_over_forward.value}};
  for (const auto& [key, ratio] : dense_passes) {
    if (ratio * best_dense > peak) {
      compute.object(key).fail("value", brief(ratio) + " x the best dense GEMM rate " + brief(best_dense) + ceiling);
    }
  }
  // The fastest grouped pass: the best grouped efficiency at the fastest backward ratio.
  const double grouped_pass = std::max({1.0, max_of(h.compute.grouped_gemm_dgrad_over_forward_by_rows_per_expert),
                                        max_of(h.compute.grouped_gemm_wgrad_over_forward_by_rows_per_expert)});
  const auto& grouped = h.compute.grouped_gemm_efficiency_by_rows_per_expert.points();
  for (std::size_t i = 0; i < grouped.size(); ++i) {
    if (grouped[i].y * best_dense * grouped_pass > peak) {
      throw InputError(in.file(),
                       compute.child_path("grouped_gemm_efficiency_by_rows_per_expert") + ".points[" +
                           std::to_string(i) + "].fraction_of_dense",
                       brief(grouped[i].y) + " x the best dense GEMM rate " + brief(best_dense) +
                           " x the fastest backward ratio " + brief(grouped_pass) + " = " +
                           brief(grouped[i].y * best_dense * grouped_pass) + ceiling);
    }
  }
  const std::pair<const char*, double> attention[] = {{"attention_fwd_TFLOPs", h.compute.attention_fwd_TFLOPs.value},
                                                      {"attention_bwd_TFLOPs", h.compute.attention_bwd_TFLOPs.value}};
  for (const auto& [key, v] : attention) {
    if (v > peak) compute.object(key).fail("value", brief(v) + ceiling);
  }
  if (const auto& t = h.compute.gemm_TFLOPs_by_power_limit) under_peak(*t, "gemm_TFLOPs_by_power_limit");
  if (const auto& t = h.compute.attention_fwd_TFLOPs_by_seq_len) under_peak(*t, "attention_fwd_TFLOPs_by_seq_len");
  if (const auto& t = h.compute.attention_bwd_TFLOPs_by_seq_len) under_peak(*t, "attention_bwd_TFLOPs_by_seq_len");
  if (const auto& t = h.compute.ssd_scan_fwd_TFLOPs_by_seq_len) under_peak(*t, "ssd_scan_fwd_TFLOPs_by_seq_len");
  for (const auto& k : h.compute.attention_by_kernel) {
    const auto rates = compute.object("attention_by_kernel").object(name_of(k.kernel));
    if (k.fwd_TFLOPs.value > peak) rates.object("fwd_TFLOPs").fail("value", brief(k.fwd_TFLOPs.value) + ceiling);
    if (k.bwd_TFLOPs.value > peak) rates.object("bwd_TFLOPs").fail("value", brief(k.bwd_TFLOPs.value) + ceiling);
  }
  if (const auto& limited = h.compute.gemm_power_limited_TFLOPs; limited && limited->value > peak) {
    compute.object("gemm_power_limited_TFLOPs").fail("value", brief(limited->value) + ceiling);
  }
  // An FP8 format's fastest dense rate stays under the FP8 peak (when the profile gives one).
  if (h.gpu.peak_fp8_dense_TFLOPs) {
    const double fp8_peak = h.gpu.peak_fp8_dense_TFLOPs->value;
    for (auto [key, spec] : {std::pair{"fp8_attention", &h.compute.fp8_attention},
                             std::pair{"mxfp8_attention", &h.compute.mxfp8_attention}}) {
      if (!*spec) continue;
      const std::string above = " TFLOP/s exceeds gpu.peak_fp8_dense_TFLOPs " + brief(fp8_peak);
      under((*spec)->fwd_TFLOPs_by_seq_len, std::string(key) + ".fwd_TFLOPs_by_seq_len", fp8_peak, above);
      under((*spec)->bwd_TFLOPs_by_seq_len, std::string(key) + ".bwd_TFLOPs_by_seq_len", fp8_peak, above);
    }
    const std::pair<const char*, const std::optional<LowPrecisionGemmSpec>*> formats[] = {
        {"fp8_gemm", &h.compute.fp8_gemm}, {"mxfp8_gemm", &h.compute.mxfp8_gemm}};
    for (const auto& [key, spec] : formats) {
      if (!*spec) continue;
      const auto& points = (*spec)->gemm_over_bf16_by_rows.points();
      for (std::size_t i = 0; i < points.size(); ++i) {
        const double rate = points[i].y * dense_gemm_rate_TFLOPs(h, points[i].x);
        if (rate > fp8_peak) {
          throw InputError(in.file(),
                           compute.child_path(key) + ".gemm_over_bf16_by_rows.points[" + std::to_string(i) + "].ratio",
                           brief(points[i].y) + " x the BF16 rate " + brief(dense_gemm_rate_TFLOPs(h, points[i].x)) +
                               " = " + brief(rate) + " TFLOP/s exceeds gpu.peak_fp8_dense_TFLOPs " + brief(fp8_peak));
        }
      }
    }
  }
  if (h.compute.hbm_sustained_GBps.value > h.gpu.hbm_bw_GBps.value) {
    compute.object("hbm_sustained_GBps")
        .fail("value", brief(h.compute.hbm_sustained_GBps.value) +
                           " GB/s exceeds the GPU's HBM bandwidth (gpu.hbm_bw_GBps " + brief(h.gpu.hbm_bw_GBps.value) +
                           ")");
  }
}

}  // namespace moesim::profile_detail
