// Execution working memory by phase (seed Table 5): activations of in-flight microbatches, loss
// buffers, transient gradients, FSDP materialized units, EP buffers, optimizer-step transients.
#include <algorithm>
#include <array>
#include <cstdio>
#include <map>

#include "models/common/json_reader.hpp"
#include "models/common/units.hpp"
#include "models/costs/low_precision.hpp"
#include "models/memory/activations.hpp"
#include "models/memory/ledger.hpp"
#include "models/memory/optimizer_layouts.hpp"
#include "models/memory/working_terms.hpp"
#include "models/moe/routing.hpp"
#include "models/plan/designs/design.hpp"
#include "models/plan/rank_layout.hpp"

namespace moesim {

StageView view_of(const Architecture& a, const ParallelPlan& plan, const std::vector<LocalTensor>& tensors,
                  std::int64_t stage) {
  StageView v;
  v.places = layer_places(plan, a);
  for (std::int64_t l = 0; l < a.num_layers; ++l) {
    if (v.places[static_cast<std::size_t>(l + 1)].stage == stage) v.layers.push_back(l);
  }
  v.has_head = v.places.back().stage == stage;  // the last stage, or stage 0 in a V
  for (const auto& lt : tensors) {
    v.unit_numel[lt.tensor->layer] += lt.local_numel;
    auto& big = v.largest_local[lt.tensor->layer];
    big = std::max(big, lt.local_numel);
  }
  return v;
}

double max_value(const std::map<std::int64_t, double>& m) {
  double out = 0;
  for (const auto& [k, x] : m) out = std::max(out, x);
  return out;
}

// The quantized copies of the inputs of the widest FP8 / MXFP8 linear of layer `l` (num_layers:
// the LM head) while its forward or backward GEMMs run (models/costs/low_precision.hpp); zero
// when the layer has none. Expert rows are the rank's routed rows; FP8-dispatched rows arrive
// quantized in the EP buffers, so the up/gate GEMM casts none of its own.
double widest_quantized_operands(const Architecture& a, const ParallelPlan& plan, std::int64_t l, double T,
                                 const RoutedRows& routed, bool backward) {
  if (!plan.precision.any_low_precision()) return 0;  // every linear in BF16: nothing is quantized
  struct Linear {
    LinearClass cls;
    double rows, in, out, weights;
    bool input_quantized = false;
  };
  // One rank's linears under TP: heads and hidden widths split, the MoE block on the sequence share.
  const TpWidths w = tp_widths(a, plan);
  const double d = dbl(a.d_model), q = w.q, kv = w.kv;
  std::array<Linear, 6> linears{};  // a block's linears at most (the allocation replay asks twice per layer)
  std::size_t count = 0;
  const auto add = [&](Linear x) { linears.at(count++) = x; };
  if (l == a.num_layers) {
    add({LinearClass::lm_head, T, d, w.vocab, d * w.vocab});
  } else {
    const LayerSpec spec = a.layer(l);
    const double up = dbl(a.mlp.up_factor());
    if (spec.mixer == Mixer::attention) {
      // MLA's down and up projections are taken as one [d, q + k + v] linear: its scratch bounds theirs.
      add({LinearClass::attention, T, d, q + kv + w.v, d * (q + kv + w.v)});
      add({LinearClass::attention, T, w.out, d, w.out * d});
    } else if (spec.mixer == Mixer::mamba) {
      const double in = 2 * w.mamba_inner + 2 * w.mamba_groups * dbl(a.mamba->state_dim) + w.mamba_heads;
      add({LinearClass::attention, T, d, in, d * in});
      add({LinearClass::attention, T, w.mamba_inner, d, w.mamba_inner * d});
    }
    if (spec.ffn == Ffn::dense) {
      const double h = w.dense_hidden;
      add({LinearClass::dense_mlp, T, d, up * h, d * up * h});
      add({LinearClass::dense_mlp, T, h, d, h * d});
    } else if (spec.ffn == Ffn::moe) {
      const MoeSpec& m = *a.moe;
      const double rows = T * plan.sequence_share() * routed.working, he = dbl(m.expert_hidden);
      const double hs = w.shared_hidden;
      const double local = dbl(m.num_experts / plan.ep);
      const bool dispatched = plan.precision.ep_dispatch != GemmPrecision::bf16;
      add({LinearClass::routed_expert, rows, d, up * he, local * d * up * he, dispatched});
      add({LinearClass::routed_expert, rows, he, d, local * he * d});
      if (m.shared_experts > 0) {
        add({LinearClass::shared_expert, T, d, up * hs, d * up * hs});
        add({LinearClass::shared_expert, T, hs, d, hs * d});
      }
    }
  }
  double widest = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const Linear& x = linears[i];
    const GemmPrecision p = plan.precision.linear(x.cls);
    if (p == GemmPrecision::bf16) continue;
    const bool caches = plan.precision.weight_caches && !(x.cls == LinearClass::lm_head && a.tie_embeddings);
    const QuantizeKernels k = linear_quantize_kernels(x.rows, x.in, x.out, x.weights, caches, x.input_quantized);
    widest = std::max(widest, quantized_operand_bytes(p, k, backward));
  }
  return widest;
}

LedgerItem quantized_operands(const Architecture& a, const ParallelPlan& plan, std::int64_t l, double T,
                              const RoutedRows& routed, bool backward) {
  return {"quantized GEMM operands", MemClass::quantized_operands,
          widest_quantized_operands(a, plan, l, T, routed, backward),
          std::string("the widest FP8 linear's quantized inputs (") + (backward ? "backward" : "forward") + ")"};
}

// Temporaries the update keeps alive, by implementation. Fused: one kernel updates in place
// (torch._fused_adamw_, Megatron's TE/apex FusedAdam). torch foreach AdamW
// (torch/optim/adamw.py _multi_tensor_adamw) builds the square-root denominator list of every
// state tensor of the shard at once. Olmo-core's foreach AdamW (optim/adamw.py foreach_adamw_step)
// keeps about three FP32 temporaries of a chunk (grad^2, denominator, update), chunks capped at
// foreach_chunk_numel elements.
LedgerItem optimizer_temporaries(const OptimizerSpec& o, double shard) {
  const double fp32 = bytes_of(DType::fp32);
  switch (o.kernels) {
    case OptimizerKernels::fused: return {"update temporaries", MemClass::optimizer_transients, 0.0, "fused: none"};
    case OptimizerKernels::foreach: {
      const double lists = o.states() > 1 ? 1.0 : 0.0;
      return {"foreach update temporaries", MemClass::optimizer_transients, lists * shard * bytes_of(o.state_dtype),
              "torch foreach: one state-sized list (the denominator) over the whole shard"};
    }
    case OptimizerKernels::olmo_core_foreach: break;
  }
  const double temps = o.kind == OptimizerKind::sgd ? 1.0 : 3.0;
  const double chunk = std::min(shard, dbl(o.foreach_chunk_numel));
  return {"foreach update temporaries", MemClass::optimizer_transients, temps * chunk * fp32,
          std::to_string(int(temps)) + " x min(shard, chunk) x fp32"};
}

double PhaseSet::bytes() const {
  double sum = 0;
  for (const auto& i : items) sum += i.bytes;
  return sum;
}

std::vector<PhaseSet> working_memory(const Architecture& a, const ParallelPlan& plan,
                                     const std::vector<LocalTensor>& tensors, std::int64_t stage,
                                     const std::vector<std::int64_t>& held_chunks) {
  const StageView v = view_of(a, plan, tensors, stage);
  return working_memory(a, plan, v, stage_routed_rows(a, plan, v), update_buffers(plan, tensors), held_chunks);
}

std::vector<PhaseSet> working_memory(const Architecture& a, const ParallelPlan& plan, const StageView& v,
                                     const RoutedRows& routed, const UpdateBuffers& update,
                                     const std::vector<std::int64_t>& held_chunks) {
  const double T = dbl(batch_shape(plan, a).microbatch_tokens);
  const double e = bytes_of(plan.precision.compute);
  const DesignEntry& design = design_of(plan);

  std::vector<std::int64_t> moe_layers;
  for (auto l : v.layers)
    if (a.is_moe_layer(l)) moe_layers.push_back(l);

  // Saved activations of one pass of each model chunk (recompute "full" keeps only block inputs).
  const std::size_t chunks = held_chunks.size();
  std::vector<double> saved(v.layers.size());
  std::vector<double> chunk_saved(chunks, 0.0);
  std::vector<SavedSplit> saved_split(v.layers.size()), chunk_split(chunks, SavedSplit{});  // the same by format
  std::vector<std::size_t> chunk_of(v.layers.size());
  for (std::size_t i = 0; i < v.layers.size(); ++i) {
    const auto l = v.layers[i];
    const BlockActivations block = saved_per_token(a, l, plan, routed);
    saved[i] = T * block.total();
    chunk_of[i] = std::min(static_cast<std::size_t>(v.places[static_cast<std::size_t>(l + 1)].chunk), chunks - 1);
    chunk_saved[chunk_of[i]] += saved[i];
    for (std::size_t f = 0; f < kSavedFormats; ++f) {
      saved_split[i][f] = T * block.by_format[f];
      chunk_split[chunk_of[i]][f] += saved_split[i][f];
    }
  }
  double held_all = 0;
  SavedSplit held_split{};
  std::int64_t held_total = 0;
  for (std::size_t c = 0; c < chunks; ++c) {
    held_all += dbl(held_chunks[c]) * chunk_saved[c];
    for (std::size_t f = 0; f < kSavedFormats; ++f) held_split[f] += dbl(held_chunks[c]) * chunk_split[c][f];
    held_total += held_chunks[c];
  }
  const auto formats = [&](const SavedSplit& split) {
    std::vector<std::pair<std::string, double>> out;
    for (std::size_t f = 0; f < kSavedFormats; ++f) {
      if (split[f] > 0) out.emplace_back(name_of(static_cast<SavedFormat>(f), plan.precision.compute), split[f]);
    }
    return out;
  };
  std::string mb = std::to_string(held_total) + " chunk pass(es) (";
  for (std::size_t c = 0; c < chunks; ++c) mb += (c ? " + " : "") + std::to_string(held_chunks[c]);
  mb += " per chunk) x " + std::to_string(static_cast<long long>(T)) + " tokens";
  if (!plan.offload_modules.empty()) {  // what the held passes keep in host memory instead
    double host = 0;
    for (std::size_t i = 0; i < v.layers.size(); ++i)
      host += dbl(held_chunks[chunk_of[i]]) * T * offloaded_per_token(a, v.layers[i], plan, routed).total();
    char text[96];
    std::snprintf(text, sizeof text, "; %.2f GiB more in host memory (activations.offload_modules)", host / kGiB);
    mb += text;
  }

  const LossBuffers loss = loss_per_token(a, plan);
  const std::vector<LedgerItem> ep_static = ep_static_buffers(a, plan, T, dbl(moe_layers.size()), routed);
  const LedgerItem ep_staging = ep_transient_staging(a, plan, T, routed, !moe_layers.empty());
  auto with_static = [&](PhaseSet p) {
    p.items.insert(p.items.end(), ep_static.begin(), ep_static.end());
    return p;
  };

  std::vector<PhaseSet> phases;
  {
    PhaseSet f{Phase::forward, {}};
    f.items.push_back({"saved activations", MemClass::activations, held_all, mb, formats(held_split)});
    if (v.has_head)
      f.items.push_back({"logits and loss", MemClass::logits_loss, T * loss.forward, "T x per-token loss buffers"});
    for (LedgerItem& item : design.forward_items(plan, v)) f.items.push_back(std::move(item));
    if (ep_staging.bytes > 0) f.items.push_back(ep_staging);
    if (plan.precision.any_low_precision()) {
      LedgerItem widest;
      if (v.has_head) widest = quantized_operands(a, plan, a.num_layers, T, routed, false);
      for (const std::int64_t l : v.layers) {
        const LedgerItem x = quantized_operands(a, plan, l, T, routed, false);
        if (x.bytes > widest.bytes) widest = x;
      }
      if (widest.bytes > 0) f.items.push_back(widest);
    }
    LedgerItem cp;  // the widest layer's, while its attention runs
    for (const std::int64_t l : v.layers) {
      const LedgerItem x = context_parallel_buffers(a, plan, l, T, false);
      if (x.bytes > cp.bytes) cp = x;
    }
    if (cp.bytes > 0) f.items.push_back(cp);
    phases.push_back(with_static(std::move(f)));
  }
  {
    // Walk the backward pass of each held chunk layer by layer and keep the worst moment; the
    // other held passes keep all their activations.
    PhaseSet best{Phase::backward, {}};
    double best_bytes = 0;  // best.bytes()
    auto consider = [&](PhaseSet candidate) {
      const double bytes = candidate.bytes();
      if (bytes > best_bytes) {
        best = std::move(candidate);
        best_bytes = bytes;
      }
    };
    for (std::size_t c = 0; c < chunks; ++c) {
      if (held_chunks[c] == 0) continue;
      const double older = held_all - chunk_saved[c];
      SavedSplit older_split = held_split;
      for (std::size_t f = 0; f < kSavedFormats; ++f) older_split[f] -= chunk_split[c][f];
      if (v.has_head && static_cast<std::int64_t>(c) == v.places.back().chunk) {
        PhaseSet p{Phase::backward, {}};
        p.items.push_back(
            {"saved activations", MemClass::activations, held_all, mb + " (LM head backward)", formats(held_split)});
        p.items.push_back({"logits, loss and logits gradient", MemClass::logits_loss, T * loss.backward,
                           "T x per-token loss backward buffers"});
        p.items.push_back({"LM head weight gradient", MemClass::weight_grad_transient,
                           v.largest_local.count(a.num_layers) ? v.largest_local.at(a.num_layers) * e : 0.0,
                           "one tensor in compute dtype"});
        const LedgerItem quantized = quantized_operands(a, plan, a.num_layers, T, routed, true);
        if (quantized.bytes > 0) p.items.push_back(quantized);
        consider(std::move(p));
      }
      double still_saved = chunk_saved[c];
      SavedSplit still_split = chunk_split[c];
      for (std::size_t i = v.layers.size(); i-- > 0;) {
        if (chunk_of[i] != c) continue;
        const std::int64_t l = v.layers[i];
        // This moment's bytes first, summed in the order its items are listed (as PhaseSet::bytes()
        // sums them); the items and their texts are made only for a moment worse than any before.
        double grads = T * backward_working_per_token(a, l, plan, routed);
        const double rebuilt = recomputed_per_token(a, l, plan, routed);
        grads += T * rebuilt;
        std::vector<LedgerItem> design_items = design.backward_items(plan, v, l);
        const bool staged = ep_staging.bytes > 0 && a.is_moe_layer(l);
        const double quantized = widest_quantized_operands(a, plan, l, T, routed, true);
        LedgerItem cp = context_parallel_buffers(a, plan, l, T, true);
        double bytes = 0;
        bytes += older + still_saved;
        bytes += grads;
        for (const LedgerItem& item : design_items) bytes += item.bytes;
        if (staged) bytes += ep_staging.bytes;
        if (quantized > 0) bytes += quantized;
        if (cp.bytes > 0) bytes += cp.bytes;
        if (bytes > best_bytes) {
          PhaseSet p{Phase::backward, {}};
          SavedSplit split = older_split;
          for (std::size_t f = 0; f < kSavedFormats; ++f) split[f] += still_split[f];
          p.items.push_back({"saved activations", MemClass::activations, older + still_saved,
                             mb + " (backward of layer " + std::to_string(l) + ")", formats(split)});
          p.items.push_back(
              {"activation gradients", MemClass::activation_grads, grads,
               "residual grad in/out + widest internal grad" + std::string(rebuilt > 0 ? " + recomputed block" : "")});
          for (LedgerItem& item : design_items) p.items.push_back(std::move(item));
          if (staged) p.items.push_back(ep_staging);
          if (quantized > 0) p.items.push_back(quantized_operands(a, plan, l, T, routed, true));
          if (cp.bytes > 0) p.items.push_back(std::move(cp));
          best = std::move(p);
          best_bytes = bytes;
        }
        still_saved -= saved[i];
        for (std::size_t f = 0; f < kSavedFormats; ++f) still_split[f] -= saved_split[i][f];
      }
    }
    phases.push_back(with_static(std::move(best)));
  }
  // Gradient reduction runs in place on the FP32 buckets (DDP) or on the reduce-scatter output.
  phases.push_back(with_static({Phase::grad_sync,
                                {{"in-place bucket collectives", MemClass::optimizer_transients, 0.0,
                                  "NCCL reduces the flat buckets in place"}}}));

  const double rebuild = update.rebuild_bytes();
  phases.push_back(with_static({Phase::optimizer_step, {optimizer_temporaries(plan.optimizer, update.shard)}}));
  if (design.rebuilds_weights(plan)) {
    const bool in_place = plan.optimizer.rebuild == WeightRebuild::in_place;
    phases.push_back(with_static({Phase::weight_rebuild,
                                  {{"coalesced all-gather buffers", MemClass::weight_rebuild, in_place ? 0.0 : rebuild,
                                    in_place ? "none: the all-gather writes the contiguous parameter buffer in place"
                                             : "(1 + W) x local shard x compute dtype per replica group"}}}));
  }
  return phases;
}

RoutedRows stage_routed_rows(const Architecture& a, const ParallelPlan& plan, const StageView& v) {
  std::vector<std::int64_t> moe_layers;
  for (auto l : v.layers)
    if (a.is_moe_layer(l)) moe_layers.push_back(l);
  const double T = dbl(batch_shape(plan, a).microbatch_tokens);
  const double load =
      a.moe ? peak_rank_load_factor(plan.routing, a.moe->num_experts, a.moe->top_k, T, plan.ep, moe_layers) : 1.0;
  return routed_rows_per_token(a, plan, load);
}

double UpdateBuffers::rebuild_bytes() const {
  double sum = 0;
  for (const auto& [pack, gather] : packs) sum += pack + gather;
  return sum;
}

// The distributed optimizer's layout of each replica group, once: its largest shard sizes the
// update's temporaries, its sharded part the rebuild buffers.
UpdateBuffers update_buffers(const ParallelPlan& plan, const std::vector<LocalTensor>& tensors) {
  return design_of(plan).update_buffers(plan, tensors);
}

UpdateBuffers whole_update(const std::vector<LocalTensor>& tensors, double divisor) {
  UpdateBuffers out;
  double local = 0;
  for (const auto& lt : tensors) local += lt.local_numel;
  out.shard = local / divisor;
  return out;
}

UpdateBuffers sharded_update(const ParallelPlan& plan, const std::vector<LocalTensor>& tensors) {
  UpdateBuffers out;
  const double e = bytes_of(plan.precision.compute);
  std::map<std::int64_t, std::vector<double>> groups;
  for (const auto& lt : tensors) groups[lt.replica_group].push_back(lt.local_numel);
  const OptimizerShardLayout& layout = optimizer_layouts().get(name_of(plan.optimizer.layout));
  for (const auto& [g, numels] : groups) {
    const LayoutResult r = layout.assign(numels, g, plan.optimizer.min_shard_numel);
    out.shard += r.largest;
    // Rebuild: a pack buffer of the local shard and a gather buffer of W x shard in compute
    // dtype per replica group; both groups' buffers can be alive together.
    if (g > 1) out.packs.emplace_back(r.sharded_on_largest * e, dbl(g) * r.sharded_on_largest * e);
  }
  return out;
}

}  // namespace moesim
