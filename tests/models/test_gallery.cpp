// The gallery of real models (scenarios/gallery): each architecture's parameter count against the
// figure its authors published, and DeepSeek-V3's FLOPs per token against its published figure.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "models/arch/flops.hpp"
#include "models/arch/inventory.hpp"
#include "models/input/scenario.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {

// What a published count counts: the model card's active count may leave out the input embedding
// (it is a lookup, no FLOPs), and a model card's total may leave out multi-token prediction.
struct Published {
  const char* name;
  double total_B;
  double active_B;  // 0: a dense model (active = total)
  bool active_counts_embedding;
  const char* source;
};

// Each figure as its authors published it (the row's source).
const Published kPublished[] = {
    {"llama3-8b", 8.03, 0, true, "meta-llama/Meta-Llama-3-8B on Hugging Face: 8.03B params"},
    {"llama3-70b", 70.6, 0, true, "meta-llama/Meta-Llama-3-70B on Hugging Face: 70.6B params"},
    {"llama3-405b", 405, 0, true, "The Llama 3 Herd of Models (arXiv 2407.21783) Table 3: 405B"},
    {"mixtral-8x7b", 46.7, 12.9, true, "Mistral AI, Mixtral of experts: 46.7B total, 12.9B per token"},
    {"mixtral-8x22b", 141, 39, true, "Mistral AI, Mixtral 8x22B: 39B active out of 141B"},
    // DeepSeek-V3 model card: 671B total (the main model; the MTP module's 14B on Hugging Face are
    // apart), 37B activated; README_WEIGHTS: 36.7B active including the output head.
    {"deepseek-v3", 671, 36.7, false, "deepseek-ai/DeepSeek-V3 README and README_WEIGHTS.md"},
    {"kimi-k2", 1040, 32.6, true, "Kimi K2 tech report (arXiv 2507.20534): 1.04T total, 32.6B activated"},
    {"qwen3-30b-a3b", 30.5, 3.3, true, "Qwen/Qwen3-30B-A3B model card: 30.5B total, 3.3B activated"},
    {"qwen3-235b-a22b", 235, 22, true, "Qwen/Qwen3-235B-A22B model card: 235B total, 22B activated"},
    // Table 1 caption: "Unembedding parameters are counted towards active, but not embeddings."
    {"gpt-oss-120b", 116.83, 5.13, false, "gpt-oss-120b model card (arXiv 2508.10925) Table 1"},
    {"olmoe-1b-7b", 6.9, 1.3, true, "OLMoE (arXiv 2409.02060) Table 1: 6.9B total, 1.3B active"},
    {"mpt-7b", 6.7, 0, true, "mosaicml/mpt-7b model card: n_parameters 6.7B"},
    {"nemotron-h-8b", 8.0, 0, true, "nvidia/Nemotron-H-8B-Base-8K model card: 8B"},
};

}  // namespace

TEST_CASE("Gallery: every model's parameters are its published count within 2%", "[unit][gallery]") {
  std::size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(test::source_path("scenarios/gallery")))
    files += e.path().extension() == ".json" ? 1 : 0;
  CHECK(files == std::size(kPublished));  // one row per gallery scenario
  for (const Published& p : kPublished) {
    INFO(p.name << ": " << p.source);
    const Scenario s = test::gallery(p.name);
    const Inventory inv = build_inventory(s.arch);
    // The main model: MTP modules apart (DeepSeek-V3's card counts them separately).
    double mtp = 0, mtp_active = 0, embedding = 0;
    for (const TensorInfo& t : inv.tensors) {
      if (t.name.starts_with("mtp.")) {
        mtp += static_cast<double>(t.numel);
        mtp_active += t.cls == TensorClass::routed_expert
                          ? static_cast<double>(t.numel) * static_cast<double>(s.arch.moe->top_k) /
                                static_cast<double>(s.arch.moe->num_experts)
                          : static_cast<double>(t.numel);
      }
      if (t.cls == TensorClass::embedding) embedding += static_cast<double>(t.numel);
    }
    CHECK((inv.params_total - mtp) / 1e9 == Approx(p.total_B).epsilon(0.02));
    if (p.active_B > 0) {
      const double active = inv.params_active - mtp_active - (p.active_counts_embedding ? 0.0 : embedding);
      CHECK(active / 1e9 == Approx(p.active_B).epsilon(0.02));
    }
  }
}

TEST_CASE("Gallery: DeepSeek-V3's MTP module and its Hugging Face size", "[unit][gallery]") {
  // README: "685B, which includes 671B of the Main Model weights and 14B of the Multi-Token
  // Prediction (MTP) Module weights"; the checkpoint stores the MTP module's own copies of the
  // shared embedding and head (2 x V x d), which training shares and moesim counts once.
  const Scenario s = test::gallery("deepseek-v3");
  const Inventory inv = build_inventory(s.arch);
  const double copies = 2.0 * 129280 * 7168;
  CHECK((inv.params_total + copies) / 1e9 == Approx(685).epsilon(0.01));
  CHECK(s.arch.mtp_layers == 1);
  CHECK(s.arch.mtp_block().ffn == Ffn::moe);
}

TEST_CASE("Gallery: DeepSeek-V3's and LLaMA-405B's FLOPs per token are their published ones within 2%",
          "[unit][gallery]") {
  // Zhao et al. 2025, "Insights into DeepSeek-V3" (ISCA '25, arXiv 2505.09343) Table 2: training
  // cost 250 GFLOPs per token at sequence length 4096 (the main model: 6 x active weights and the
  // causal MLA scores). The MTP module is counted apart (f.mtp).
  const Scenario s = test::gallery("deepseek-v3");
  const FlopsPerToken f = flop_conventions().get("olmo-core").per_token(s.arch, build_inventory(s.arch));
  CHECK((f.total - f.mtp) / 1e9 == Approx(250).epsilon(0.02));
  // The scores by hand: 61 layers x 6 x (S + 1) / 2 keys x 128 heads x (192 + 128) widths.
  CHECK(f.attention_scores == Approx(61.0 * 6 * 4097.0 / 2 * 128 * (192 + 128)));
  CHECK(f.mtp > 0);
  // The same table: LLaMA-405B (dense), 2448 GFLOPs per token at sequence length 4096.
  const Scenario llama =
      load_scenario(test::source_path("scenarios/gallery/llama3-405b.json"), {"architecture.sequence_length=4096"});
  const FlopsPerToken g = flop_conventions().get("olmo-core").per_token(llama.arch, build_inventory(llama.arch));
  CHECK(g.total / 1e9 == Approx(2448).epsilon(0.02));
}

TEST_CASE("Megatron's FLOP count: MLA, MTP and Mamba layers as training.py counts them", "[unit][gallery]") {
  const Registry<FlopConvention>& conventions = flop_conventions();
  {  // A dense GQA model: 6 (d (q + 2 kv) + q d) + 6 S q per layer, 18 d h, 6 d V; no causal +1.
    const Scenario s = test::gallery("llama3-8b");
    const FlopsPerToken f = conventions.get("megatron").per_token(s.arch, build_inventory(s.arch));
    const double d = 4096, q = 4096, kv = 1024, S = 8192, h = 14336, V = 128256;
    CHECK(f.total == Approx(32 * (6 * (d * (q + 2 * kv) + q * d) + 6 * S * q + 18 * d * h) + 6 * d * V));
  }
  {  // Nemotron-H: hybrid_flops' Mamba term with d_in = 2d and its 7 d_in N scan; squared-ReLU MLPs 12 d h.
    const Scenario s = test::gallery("nemotron-h-8b");
    const FlopsPerToken f = conventions.get("megatron").per_token(s.arch, build_inventory(s.arch));
    const double d = 4096, din = 8192, N = 128, G = 8, H = 128;
    const double mamba = 3 * (2 * d * (2 * din + 2 * G * N + H) + 7 * din * N + 2 * din * d);
    CHECK(f.mamba == Approx(24 * mamba));  // 24 M layers in the pattern
    CHECK(f.dense_mlp == Approx(24 * 12 * d * 21504.0));
  }
  {  // DeepSeek-V3: the MTP depth is one more MoE layer, its norms and projection and the logits again.
    const Scenario s = test::gallery("deepseek-v3");
    const FlopsPerToken f = conventions.get("megatron").per_token(s.arch, build_inventory(s.arch));
    const double d = 7168, V = 129280;
    CHECK(f.mtp > 6 * d * V + 6 * (3 * d + 2 * d * d));
    CHECK(f.router == 0);  // Megatron does not count the router
  }
}
