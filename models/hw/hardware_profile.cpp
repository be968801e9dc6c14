#include "models/hw/hardware_profile.hpp"

#include "models/input/json_reader.hpp"

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
// A profile number is {"value": x, "kind": "...", "source": "..."}: no bare numbers, so that
// every figure the tool prints can be traced.
Quantity quantity(const JsonReader& parent, std::string_view key, Range range) {
  const JsonReader q = parent.object(key);
  Quantity out;
  out.value = q.number("value", range);
  const auto kind = q.choice("kind", {"datasheet", "published", "fitted", "assumption"});
  out.kind = kind == "datasheet" ? SourceKind::datasheet
             : kind == "published" ? SourceKind::published
             : kind == "fitted" ? SourceKind::fitted : SourceKind::assumption;
  out.source = q.string("source");
  if (out.source.empty()) q.fail("source", "must say where the number comes from");
  q.finish();
  return out;
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
  in.finish();
  return h;
}

}  // namespace moesim
