// Model FLOPs per trained token (forward + backward) under a named counting convention.
// Conventions differ in how attention is counted and which weights count; every reported MFU
// names the convention it used.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "models/arch/architecture.hpp"
#include "models/arch/inventory.hpp"
#include "models/common/registry.hpp"

namespace moesim {

struct FlopsPerToken {
  std::string convention;
  double total = 0;
  double attention_projections = 0;  // q, k, v, out GEMMs (MLA: its down and up projections)
  double attention_scores = 0;       // QK^T and PV
  double dense_mlp = 0;
  double router = 0;
  double experts = 0;         // routed (K active) + shared experts
  double routed_experts = 0;  // the routed part of `experts` (what a dropped token skips)
  double mamba = 0;           // Mamba-2 mixers: in/out projections and the SSD scan
  double mtp = 0;             // multi-token prediction modules: block, projection, head
  double lm_head = 0;
  // The parts' sum (what `total` holds once a convention has counted them).
  double parts() const {
    return attention_projections + attention_scores + dense_mlp + router + experts + mamba + mtp + lm_head;
  }
};

class FlopConvention : public Registered {
 public:
  using Registered::Registered;
  virtual std::string_view source() const = 0;
  virtual FlopsPerToken per_token(const Architecture& arch, const Inventory& inv) const = 0;
};

const Registry<FlopConvention>& flop_conventions();
// Megatron-LM's count (megatron/training/training.py num_floating_point_operations), the number
// its training log's TFLOP/s/GPU is made of.
std::unique_ptr<FlopConvention> megatron_flop_convention();
inline constexpr std::string_view kDefaultFlopConvention = "olmo-core";

// Keys a query attends to on average under a causal mask of `window` keys (0: none) over
// sequences of `seq_len`: (S + 1) / 2 without a window, S w - w (w - 1) / 2 over S with one.
double mean_causal_keys(double seq_len, double window);

// Weights of one layer's attention linears (GQA: q, k, v, out; MLA: the down, up and out
// projections), biases and norms left out.
double attention_weights(const Architecture& arch);

// Forward FLOPs per token of a Mamba-2 mixer's SSD scan (ssd_flops_per_token, cost_types.hpp).
double ssd_scan_flops(const MambaSpec& mamba);

}  // namespace moesim
