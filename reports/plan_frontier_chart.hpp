// The plan page's throughput-vs-memory chart (reports/plan_html.cpp): a Vega-Lite spec that the
// page's script hands to Vega-Embed unchanged. Every datum is a number the plan document holds.
#pragma once

#include <nlohmann/json.hpp>

#include "reports/document_reader.hpp"

namespace moesim {

// x = peak reserved GiB, y = tokens/s/GPU: every replayed plan (layer "replayed"), the top K
// ringed and labelled with their rank ("top", "top_labels"), the Pareto frontier of the
// replayed plans that fit ("frontier": the most tokens/s/GPU for at most that memory), the
// usable-capacity wall ("capacity"), and the memory-pruned (OOM) plans at their memory with
// y = their step-time bound's tokens/s/GPU, an upper bound ("oom_bound"). Null when the
// document has no plan to draw.
nlohmann::json plan_frontier_chart(const DocumentNode& plan_document);

// The usable capacity per GPU in GiB: the top plan's result.capacity_GiB when present, else a
// plan's peak_reserved_GiB + headroom_GiB (the ledger's capacity); null without any plan.
nlohmann::json plan_capacity_GiB(const DocumentNode& plan_document);

}  // namespace moesim
