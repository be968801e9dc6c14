// The unit-time pipeline the schedule goldens are worked out on: eight dense layers of d 64 on
// four GPUs (DP 1 under PP4), 16-token microbatches, m = 8. Vocabulary 96 is no other GEMM's
// dimension, so a FakeCosts book (tests/sim/fake_costs.hpp) can make the LM head free.
#pragma once

#include <nlohmann/json.hpp>

#include "models/common/json_file.hpp"
#include "tests/support/fixtures.hpp"

namespace moesim::test {

// The scenario document with `pipeline` as its plan.pipeline section.
inline nlohmann::json unit_pipeline_document(const nlohmann::json& pipeline) {
  return {{"architecture",
           {{"num_layers", 8},
            {"d_model", 64},
            {"vocab_size", 96},
            {"sequence_length", 16},
            {"attention", {{"num_heads", 4}, {"num_kv_heads", 4}, {"head_dim", 16}}},
            {"dense_hidden", 128}}},
          {"plan",
           {{"design", "ddp"},
            {"nodes", 1},
            {"gpus_per_node", 4},
            {"pipeline", pipeline},
            {"batch", {{"rank_microbatch_sequences", 1}, {"global_batch_tokens", 8 * 16}}}}},
          {"hardware", read_json_file(source_path("hardware_profiles/b300-hgx.json"))}};
}

}  // namespace moesim::test
