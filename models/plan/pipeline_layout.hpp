// Megatron-Core's pipeline_model_parallel_layout (plan.pipeline.layout): which layers each virtual
// pipeline stage holds, written as Megatron writes it
// (megatron/core/transformer/pipeline_parallel_layer_layout.py, PipelineParallelLayerLayout):
// stages split by '|' in model order (virtual stage j = chunk x PP + stage), 'E' the embedding,
// 't' a decoder layer, 'm' a multi-token-prediction layer, 'L' the loss; "(tt|)*30" and "t*3"
// repeat, commas are cosmetic, and a stage may be empty ("E||t|L"). DeepSeek-V3 on 1024 H100 in
// Megatron-Bridge's recipe: "Et|(tt|)*30mL", 32 virtual stages, the last holding only the MTP
// layer and the loss.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace moesim {

struct PipelineLayoutStage {
  std::int64_t decoder = 0;  // 't'
  std::int64_t mtp = 0;      // 'm'
  bool embedding = false;    // 'E'
  bool loss = false;         // 'L'
};

struct PipelineLayout {
  std::vector<PipelineLayoutStage> stages;  // in model order
  std::string error;                        // why the text is not a layout moesim runs ("" when it is)
};

// The layout `text` describes, with Megatron's parse (its two unrolling patterns, then one stage
// per '|') and the structural rules that need no model: one embedding, first; one loss, last; no
// decoder layer after an MTP layer. moesim runs the embedding on the first virtual stage and the
// MTP layers with the loss on the last (models/costs/layer_work.cpp), so it refuses an embedding
// after an empty first stage and Megatron's standalone MTP stage ("...|m|L").
PipelineLayout parse_pipeline_layout(std::string_view text);

// The decoder layers of each virtual stage (plan.pipeline.layer_split's form).
std::vector<std::int64_t> layout_decoder_layers(const PipelineLayout& layout);
std::int64_t layout_mtp_layers(const PipelineLayout& layout);

}  // namespace moesim
