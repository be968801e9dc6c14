#include "models/hw/hardware_profile.hpp"

#include <algorithm>
#include <initializer_list>
#include <limits>
#include <sstream>

#include "models/common/json_reader.hpp"

namespace moesim {

std::string_view name_of(SourceKind k) {
  switch (k) {
    case SourceKind::datasheet: return "datasheet";
    case SourceKind::published: return "published";
    case SourceKind::fitted: return "fitted";
    case SourceKind::assumption: return "assumption";
  }
  return "?";
}

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

// A profile number is {"value": x, "kind": "...", "source": "..."}: no bare numbers, so that
// every figure the tool prints can be traced.
Quantity quantity(const JsonReader& parent, std::string_view key, Range range) {
  const JsonReader q = parent.object(key);
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

// A table is {"kind", "source", "points": [{x_key: .., y_key: ..}, ...]}: one provenance for the
// whole curve; at least one point, x strictly increasing, y positive.
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
    if (i > 0 && pt.x <= out.points.back().x) {
      std::ostringstream msg;
      msg << "must be greater than the previous point's " << x_key << " (" << out.points.back().x
          << "): table rows are strictly increasing";
      p.fail(x_key, msg.str());
    }
    p.finish();
    out.points.push_back(pt);
  }
  t.finish();
  return out;
}

// busbw / link rate: above 1 only where the switch reduces in-network (NVLS), so cap at 2.
const Range kEfficiency{0.0, 2.0, true};

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
  out.base_latency_us = quantity(a, "base_latency_us", Range::non_negative());
  out.busbw_efficiency = efficiencies(a.object("busbw_efficiency"), required, optional);
  a.finish();
  return out;
}

ComputeSpec parse_compute(const JsonReader& c) {
  ComputeSpec s;
  s.gemm_bf16_TFLOPs_by_rows = table(c, "gemm_bf16_TFLOPs_by_rows", "rows", "TFLOPs", Range::positive());
  // Published grouped/dense ratios are 0.59-0.96; up to 1.5 leaves room for a grouped kernel
  // that beats a poorly tuned dense one, while catching percentages typed as fractions.
  s.grouped_gemm_efficiency_by_rows_per_expert = table(c, "grouped_gemm_efficiency_by_rows_per_expert",
                                                       "rows_per_expert", "fraction_of_dense", Range{0.0, 1.5, true});
  s.attention_fwd_TFLOPs = quantity(c, "attention_fwd_TFLOPs", Range::positive());
  s.attention_bwd_TFLOPs = quantity(c, "attention_bwd_TFLOPs", Range::positive());
  s.hbm_sustained_GBps = quantity(c, "hbm_sustained_GBps", Range::positive());
  // A per-kernel overhead of a millisecond or more would be a unit mistake (ms typed as us).
  s.kernel_launch_us = quantity(c, "kernel_launch_us", Range::between(0.0, 1000.0));
  c.finish();
  return s;
}

InterconnectSpec parse_interconnect(const JsonReader& ic) {
  InterconnectSpec s;
  {
    const auto in = ic.object("intra_node");
    s.intra_node.domain_gpus = quantity(in, "domain_gpus", Range::between(1, 1024));
    s.intra_node.hop_latency_us = quantity(in, "hop_latency_us", Range::non_negative());
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
    s.inter_node.hop_latency_us = quantity(out, "hop_latency_us", Range::non_negative());
    s.inter_node.nic_efficiency = quantity(out, "nic_efficiency", Range{0.0, 1.0, true});
    out.finish();
  }
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
  double best_dense = 0;
  const auto& gemm = h.compute.gemm_bf16_TFLOPs_by_rows.points;
  for (std::size_t i = 0; i < gemm.size(); ++i) {
    best_dense = std::max(best_dense, gemm[i].y);
    if (gemm[i].y > peak) {
      throw InputError(in.file(),
                       compute.child_path("gemm_bf16_TFLOPs_by_rows") + ".points[" + std::to_string(i) + "].TFLOPs",
                       brief(gemm[i].y) + ceiling);
    }
  }
  const auto& grouped = h.compute.grouped_gemm_efficiency_by_rows_per_expert.points;
  for (std::size_t i = 0; i < grouped.size(); ++i) {
    if (grouped[i].y * best_dense > peak) {
      throw InputError(in.file(),
                       compute.child_path("grouped_gemm_efficiency_by_rows_per_expert") + ".points[" +
                           std::to_string(i) + "].fraction_of_dense",
                       brief(grouped[i].y) + " x the best dense GEMM rate " + brief(best_dense) + " = " +
                           brief(grouped[i].y * best_dense) + ceiling);
    }
  }
  const std::pair<const char*, double> attention[] = {{"attention_fwd_TFLOPs", h.compute.attention_fwd_TFLOPs.value},
                                                      {"attention_bwd_TFLOPs", h.compute.attention_bwd_TFLOPs.value}};
  for (const auto& [key, v] : attention) {
    if (v > peak) compute.object(key).fail("value", brief(v) + ceiling);
  }
  if (h.compute.hbm_sustained_GBps.value > h.gpu.hbm_bw_GBps.value) {
    compute.object("hbm_sustained_GBps")
        .fail("value", brief(h.compute.hbm_sustained_GBps.value) +
                           " GB/s exceeds the GPU's HBM bandwidth (gpu.hbm_bw_GBps " + brief(h.gpu.hbm_bw_GBps.value) +
                           ")");
  }
}

}  // namespace

HardwareProfile parse_hardware_profile(const JsonReader& in) {
  HardwareProfile h;
  in.string_or("schema", "");
  h.name = in.string("name");
  h.description = in.string_or("description", "");
  {
    const auto g = in.object("gpu");
    h.gpu.model = g.string("model");
    h.gpu.peak_bf16_TFLOPs = quantity(g, "peak_bf16_dense_TFLOPs", Range::positive());
    h.gpu.hbm_bw_GBps = quantity(g, "hbm_bw_GBps", Range::positive());
    g.finish();
  }
  {
    const auto m = in.object("memory");
    h.memory.usable_capacity_GiB = quantity(m, "usable_capacity_GiB", Range::positive());
    h.memory.cuda_context_GiB = quantity(m, "cuda_context_GiB", Range::non_negative());
    h.memory.nccl_buffers_GiB = quantity(m, "nccl_buffers_GiB", Range::non_negative());
    h.memory.library_workspace_GiB = quantity(m, "library_workspace_GiB", Range::non_negative());
    h.memory.fragmentation_fraction = quantity(m, "fragmentation_fraction", Range::between(0.0, 0.9));
    m.finish();
  }
  {
    const auto n = in.object("node");
    h.node.gpus_per_node = quantity(n, "gpus_per_node", Range::between(1, 1024));
    h.node.nvlink_bw_GBps_per_direction = quantity(n, "nvlink_bw_GBps_per_direction", Range::positive());
    h.node.nic_bw_Gbps_per_gpu = quantity(n, "nic_bw_Gbps_per_gpu", Range::positive());
    n.finish();
  }
  h.compute = parse_compute(in.object("compute"));
  check_rates_under_peaks(h, in);
  h.interconnect = parse_interconnect(in.object("interconnect"));
  if (h.interconnect.intra_node.domain_gpus.value < h.node.gpus_per_node.value) {
    in.object("interconnect")
        .object("intra_node")
        .object("domain_gpus")
        .fail("value", "an NVLink domain holds at least the node's " +
                           std::to_string(static_cast<int>(h.node.gpus_per_node.value)) + " GPUs");
  }
  {
    const auto f = in.object("interference");
    // A fraction of GEMM time; B300 measures 0.23-0.27, so 0.95 only rejects nonsense.
    h.interference.compute_slowdown_with_comm = quantity(f, "compute_slowdown_with_comm", Range::between(0.0, 0.95));
    f.finish();
  }
  in.finish();
  return h;
}

}  // namespace moesim
