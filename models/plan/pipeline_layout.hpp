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

// The Megatron-Core keys that place layers on pipeline stages, as a plan gives them: the layout
// text, or the uneven split (num_layers_in_first/last_pipeline_stage, or the embedding and the
// loss each counted as a layer: account_for_embedding/loss_in_pipeline_split).
struct MegatronSplit {
  std::string layout;                   // pipeline.layout
  std::int64_t layout_mtp_layers = 0;   // the MTP layers m the layout names
  std::int64_t first_stage_layers = 0;  // pipeline.first_stage_layers (0: not given)
  std::int64_t last_stage_layers = 0;   // pipeline.last_stage_layers (0: not given)
  bool account_for_embedding = false;   // pipeline.account_for_embedding
  bool account_for_loss = false;        // pipeline.account_for_loss
  bool uneven() const {
    return first_stage_layers > 0 || last_stage_layers > 0 || account_for_embedding || account_for_loss;
  }
  // The first uneven-split key the plan gives, the one a refusal names ("" when none is).
  std::string_view uneven_key() const {
    return first_stage_layers > 0  ? "first_stage_layers"
           : last_stage_layers > 0 ? "last_stage_layers"
           : account_for_embedding ? "account_for_embedding"
           : account_for_loss      ? "account_for_loss"
                                   : "";
  }
};
// The pipeline keys (under plan.pipeline) that place layers the Megatron way: a plan written for
// other stages (a design spec's, a planner candidate's) drops them.
inline constexpr std::string_view kMegatronSplitKeys[] = {"layout", "first_stage_layers", "last_stage_layers",
                                                          "account_for_embedding", "account_for_loss"};

// The decoder layers of each virtual stage (model order, virtual stage j = chunk x PP + stage)
// under the uneven-split keys, as Megatron-Core builds them (transformer_block.py
// get_num_layers_to_build): the first and last ranks' counts as given and the rest even, or
// (num_layers + 1 per counted embedding or loss) / PP a rank with one layer fewer on the first
// (last) virtual stage; each rank's count split evenly over its `chunks`. `error` holds the
// check that failed (transformer_config.py's, in its words) and `key` the pipeline key at fault.
struct StageSplit {
  std::vector<std::int64_t> layers;
  std::string key, error;
};
StageSplit megatron_stage_split(const MegatronSplit& keys, std::int64_t num_layers, std::int64_t pp,
                                std::int64_t chunks);

}  // namespace moesim
