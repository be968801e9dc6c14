// `moesim cost collective|gemm|grouped-gemm|attention|memory|ep --profile P ... [--json FILE|-]`: one kernel or
// collective priced by the cost models on a hardware profile.
#include <cmath>
#include <cstdlib>
#include <functional>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/listing.hpp"
#include "cli/option_checks.hpp"
#include "models/arch/flops.hpp"
#include "models/common/errors.hpp"
#include "models/common/json_file.hpp"
#include "models/common/json_reader.hpp"
#include "models/common/units.hpp"
#include "models/costs/collective_model.hpp"
#include "models/costs/compute_costs.hpp"
#include "models/costs/ep_transports.hpp"
#include "models/costs/loss_paths.hpp"
#include "models/hw/profile_lookup.hpp"
#include "models/memory/optimizer_layouts.hpp"
#include "reports/cost_report.hpp"
#include "reports/output_file.hpp"
#include "sim/resource_sharing.hpp"
#include "sim/schedules/param_sync.hpp"

namespace moesim::cli {

namespace {
// "4096", "256MiB", "1GiB", "1.5GB": a number >= 0 and an optional binary (KiB..TiB) or decimal (KB..TB) unit.
double parse_size(const std::string& text, const std::string& option) {
  static const std::regex pattern(R"(^([0-9]+(\.[0-9]+)?)(B|KiB|MiB|GiB|TiB|KB|MB|GB|TB)?$)");
  std::smatch m;
  if (!std::regex_match(text, m, pattern)) {
    throw InputError("", option, "\"" + text + "\" is not a size; use bytes or a unit: 4096, 256MiB, 1GiB, 2GB");
  }
  const std::string unit = m[3].str();
  const double scale = unit == "KiB"   ? kKiB
                       : unit == "MiB" ? kMiB
                       : unit == "GiB" ? kGiB
                       : unit == "TiB" ? kGiB * 1024
                       : unit == "KB"  ? 1e3
                       : unit == "MB"  ? 1e6
                       : unit == "GB"  ? 1e9
                       : unit == "TB"  ? 1e12
                                       : 1.0;
  const double value = std::strtod(m[1].str().c_str(), nullptr) * scale;
  if (!std::isfinite(value)) throw InputError("", option, "\"" + text + "\" is too large");
  return value;
}

struct Common {
  std::string profile;
  std::string model;
  std::string json_out;
};

CLI::App* add_sub(CLI::App* cost, const std::string& name, const std::string& help, Common& c) {
  auto* sub = cost->add_subcommand(name, help);
  sub->add_option("--profile", c.profile, kProfileOptionHelp)->required();
  sub->add_option("--model", c.model, "cost model name from the registry (default: the only one)");
  sub->add_option("--json", c.json_out, "also write the result as JSON to FILE ('-' for standard output)")
      ->check(output_path());
  return sub;
}

// A cost model names a bad request by its field (ranks_per_node) and no file; here the request is
// `moesim cost <kernel>`'s command line, so the error names the option (--ranks-per-node) that
// set the field, where there is one.
int naming_options(const CLI::App& sub, const std::function<int()>& run) {
  try {
    return run();
  } catch (const InputError& e) {
    if (!e.file().empty() || e.path().empty()) throw;
    std::string option = e.path().rfind("--", 0) == 0 ? e.path() : "--" + e.path();
    std::replace(option.begin(), option.end(), '_', '-');
    if (sub.get_option_no_throw(option) == nullptr) option = e.path();
    throw InputError("moesim cost " + sub.get_name(), option, e.message(), e.infeasible());
  }
}

HardwareProfile load_profile(const std::string& argument) {
  const std::string path = resolve_profile(argument);
  const nlohmann::json doc = read_json_file(path);
  return parse_hardware_profile(JsonReader(doc, path, ""));
}

void emit(const Common& c, const std::string& text, const nlohmann::json& j) {
  listing_stream({{"--json", &c.json_out}}) << text;
  if (!c.json_out.empty()) write_output(c.json_out, json_text(j));
}

std::string or_default(const std::string& name, std::string_view fallback) {
  return name.empty() ? std::string(fallback) : name;
}

struct CollectiveArgs {
  Common c;
  std::string kind = "all_reduce", bytes, algorithm, pxn = "profile";
  int ranks = 0, ranks_per_node = 0;
};

int run_collective(const CollectiveArgs& a) {
  const HardwareProfile hw = load_profile(a.c.profile);
  const CollectiveModel& model = collective_models().get(or_default(a.c.model, kDefaultCollectiveModel));
  CollectiveRequest req;
  req.kind = parse_collective_kind(a.kind);
  req.bytes = parse_size(a.bytes, "--bytes");
  req.ranks = a.ranks;
  req.ranks_per_node = a.ranks_per_node;
  req.algorithm = a.algorithm;
  req.pxn = parse_pxn_choice(a.pxn);
  CollectiveQuote quote{hw.name, std::string(model.name()), req, model.cost(hw, req), {}};
  for (const auto& alg : model.algorithms(hw, req)) {
    CollectiveRequest forced = req;
    forced.algorithm = alg;
    quote.algorithms.push_back(model.cost(hw, forced));
  }
  emit(a.c, collective_text(quote), collective_json(quote));
  return 0;
}

struct EpArgs {
  Common c;
  std::string bytes, pxn = "profile";
  int ranks = 0, ranks_per_node = 0, sms = 0;
  double top_k = 0, experts = 0;
};

// Every registered transport on one request; those the profile has no numbers for say so.
int run_ep(const EpArgs& a) {
  const HardwareProfile hw = load_profile(a.c.profile);
  const CollectiveModel& collectives = collective_models().get(or_default(a.c.model, kDefaultCollectiveModel));
  EpTransferQuote quote;
  quote.profile = hw.name;
  quote.request = {parse_size(a.bytes, "--bytes"), a.ranks, a.ranks_per_node, a.top_k, a.experts,
                   parse_pxn_choice(a.pxn)};
  quote.request.sms = a.sms;
  if (a.top_k > a.experts) throw InputError("moesim cost ep", "--top-k", "exceeds --experts; allowed: 1..experts");
  for (const EpTransport t : all_ep_transports()) {
    const EpTransportModel& model = ep_transport_model(t);
    EpTransferQuote::Row row;
    row.transport = name_of(t);
    try {
      EpTransferRequest request = quote.request;  // --bytes: every routed copy; a gatherer moves each token once
      if (model.gathers_tokens()) request.bytes /= request.top_k;
      row.cost = model.cost(hw, collectives, request);
      row.fuses_permutation = model.fuses_permutation();
    } catch (const ProfileGapError& e) {  // a bad request (any other InputError) stops the listing
      row.unavailable = "not in this profile (" + e.path() + ")";
    }
    quote.rows.push_back(row);
  }
  emit(a.c, ep_transfer_text(quote), ep_transfer_json(quote));
  return 0;
}

struct GemmArgs {
  Common c;
  std::int64_t m = 0, n = 0, k = 0;
  std::string pass = "forward";
};

struct GroupedArgs {
  Common c;
  std::int64_t experts = 0, tokens = 0, top_k = 0, n = 0, k = 0;
  std::vector<double> rows;
  std::string pass = "forward";
};

struct AttentionArgs {
  Common c;
  std::int64_t sequences = 1, seq_len = 0, heads = 0, kv_heads = 0, head_dim = 0, v_head_dim = 0, window = 0;
  bool no_causal = false;
};

struct MemoryArgs {
  Common c;
  std::string bytes;
  std::string kernel = "copy";
};

int run_gemm(const GemmArgs& a) {
  const HardwareProfile hw = load_profile(a.c.profile);
  const GemmCost& model = gemm_cost_models().get(or_default(a.c.model, kDefaultGemmCost));
  const GemmPass pass = parse_gemm_pass(a.pass);
  const KernelTime t = model.time(hw, {dbl(a.m), dbl(a.n), dbl(a.k), pass});
  const std::string head = "GEMM [" + std::to_string(a.m) + ", " + std::to_string(a.k) + "] x [" + std::to_string(a.k) +
                           ", " + std::to_string(a.n) + "] BF16, " + std::string(name_of(pass)) + ", on " + hw.name;
  nlohmann::json j = {{"profile", hw.name},
                      {"model", model.name()},
                      {"request", {{"m", a.m}, {"n", a.n}, {"k", a.k}, {"pass", name_of(pass)}}},
                      {"result", kernel_json(t)}};
  emit(a.c, kernel_line(head, t), j);
  return 0;
}

int run_grouped(const GroupedArgs& a) {
  const HardwareProfile hw = load_profile(a.c.profile);
  const GroupedGemmCost& model = grouped_gemm_cost_models().get(or_default(a.c.model, kDefaultGroupedGemmCost));
  std::vector<double> rows = a.rows;
  if (rows.empty()) {  // uniform routing: tokens x top-k rows spread evenly
    if (a.experts <= 0 || a.tokens <= 0 || a.top_k <= 0) {
      throw InputError("", "--experts/--tokens/--top-k", "give all three (uniform rows) or --rows");
    }
    if (a.top_k > a.experts) throw InputError("", "--top-k", "cannot exceed --experts");
    rows.assign(static_cast<std::size_t>(a.experts), static_cast<double>(a.tokens * a.top_k) / a.experts);
  }
  const GemmPass pass = parse_gemm_pass(a.pass);
  const KernelTime t = model.time(hw, {rows, dbl(a.n), dbl(a.k), pass});
  double total = 0;
  for (double r : rows) total += r;
  const std::string head = "grouped GEMM, " + std::to_string(rows.size()) + " experts, " + significant(total) +
                           " rows, [rows, " + std::to_string(a.k) + "] x [" + std::to_string(a.k) + ", " +
                           std::to_string(a.n) + "] BF16 on " + hw.name;
  nlohmann::json j = {{"profile", hw.name},
                      {"model", model.name()},
                      {"request", {{"rows_per_expert", rows}, {"n", a.n}, {"k", a.k}, {"pass", name_of(pass)}}},
                      {"result", kernel_json(t)}};
  emit(a.c, kernel_line(head, t), j);
  return 0;
}

int run_attention(const AttentionArgs& a) {
  const HardwareProfile hw = load_profile(a.c.profile);
  const AttentionCost& model = attention_cost_models().get(or_default(a.c.model, kDefaultAttentionCost));
  AttentionShape s;
  s.sequences = a.sequences;
  s.seq_len = a.seq_len;
  s.heads = a.heads;
  s.kv_heads = a.kv_heads;
  // As the architecture requires (models/arch/architecture.cpp): grouped-query attention shares
  // each key/value head among a whole number of query heads.
  if (a.kv_heads > 0 && a.heads % a.kv_heads != 0) {
    throw InputError("moesim cost attention", "--kv-heads",
                     std::to_string(a.kv_heads) + " does not divide --heads (" + std::to_string(a.heads) +
                         "); allowed: a divisor of --heads (grouped-query attention)");
  }
  s.head_dim = a.head_dim;
  s.v_head_dim = static_cast<double>(a.v_head_dim);
  s.window = static_cast<double>(a.window);
  s.causal = !a.no_causal;
  if (a.window > 0 && !s.causal)
    throw InputError("moesim cost attention", "--window", "a sliding window is causal; drop --no-causal");
  const AttentionTime t = model.time(hw, s);
  const std::string head = std::string(s.causal ? "causal" : "full") + " flash attention, " +
                           std::to_string(a.sequences) + " x " + std::to_string(a.seq_len) + " tokens, " +
                           std::to_string(a.heads) + " heads x " + std::to_string(a.head_dim) +
                           (a.window > 0 ? ", window " + std::to_string(a.window) : "") + " on " + hw.name;
  nlohmann::json j = {{"profile", hw.name},
                      {"model", model.name()},
                      {"request",
                       {{"sequences", a.sequences},
                        {"seq_len", a.seq_len},
                        {"heads", a.heads},
                        {"kv_heads", a.kv_heads},
                        {"head_dim", a.head_dim},
                        {"causal", s.causal}}},
                      {"result", {{"forward", kernel_json(t.forward)}, {"backward", kernel_json(t.backward)}}}};
  if (a.v_head_dim > 0) j["request"]["v_head_dim"] = a.v_head_dim;
  if (a.window > 0) j["request"]["window"] = a.window;
  emit(a.c, head + "\n" + kernel_line("  forward", t.forward) + kernel_line("  backward", t.backward), j);
  return 0;
}

int run_memory(const MemoryArgs& a) {
  const HardwareProfile hw = load_profile(a.c.profile);
  const MemoryBoundCost& model = memory_bound_cost_models().get(or_default(a.c.model, kDefaultMemoryBoundCost));
  const double bytes = parse_size(a.bytes, "--bytes");
  const MemoryKernel kind = parse_memory_kernel(a.kernel);
  const KernelTime t = model.time(hw, bytes, kind);
  nlohmann::json j = {{"profile", hw.name},
                      {"model", model.name()},
                      {"request", {{"bytes", bytes}, {"kernel", name_of(kind)}}},
                      {"result", kernel_json(t)}};
  emit(a.c, kernel_line(std::string(name_of(kind)) + " kernel moving " + bytes_text(bytes) + " on " + hw.name, t), j);
  return 0;
}
}  // namespace

// Every registry of models chosen by name, and how a scenario chooses from it.
std::vector<ModelFamily> registered_models() {
  const auto family = [](const auto& registry, std::string choose_with) {
    return ModelFamily{registry.kind(), std::move(choose_with), registry.entries()};
  };
  return {family(gemm_cost_models(), "cost_models.gemm"),
          family(grouped_gemm_cost_models(), "cost_models.grouped_gemm"),
          family(attention_cost_models(), "cost_models.attention"),
          family(memory_bound_cost_models(), "cost_models.memory"),
          family(collective_models(), "cost_models.collective"),
          family(resource_sharing_models(), "cost_models.resource_sharing"),
          family(ep_transport_models(), "plan.expert_parallel.transport"),
          family(loss_paths(), "plan.activations.loss"),
          family(param_sync_models(), "the plan's design (moesim list designs)"),
          family(optimizer_layouts(), "plan.optimizer.layout"),
          family(flop_conventions(), "flop_convention")};
}

Runner add_cost_command(CLI::App& app) {
  auto* cost = app.add_subcommand(
      "cost", "price one kernel or collective with the cost models (--list: every registered model)");
  cost->require_subcommand(0, 1);
  auto list = std::make_shared<Common>();
  auto listing = std::make_shared<bool>(false);
  cost->add_flag("--list", *listing,
                 "list every registered model with its description, and the scenario key that chooses it");
  cost->add_option("--json", list->json_out,
                   "with --list: also write the list as JSON to FILE ('-' for standard output)")
      ->check(output_path());

  auto col = std::make_shared<CollectiveArgs>();
  auto* c = add_sub(cost, "collective", "NCCL collective: time, algbw, busbw, algorithm", col->c);
  c->add_option("--kind", col->kind,
                "all_reduce, all_gather, reduce_scatter, all_to_all (or alltoall), send_recv, broadcast");
  c->add_option("--bytes", col->bytes, "per-rank buffer, nccl-tests convention (4096, 256MiB, 1GiB)")->required();
  c->add_option("--ranks", col->ranks, "group size")->required()->check(positive_number());
  c->add_option("--ranks-per-node", col->ranks_per_node, "group ranks per NVLink domain (default: fill domains)")
      ->check(positive_number());
  c->add_option("--algorithm", col->algorithm, "force ring, tree, nvls, nvls_tree, hierarchical or p2p");
  c->add_option(
       "--pxn", col->pxn,
       "NCCL PXN relay for cross-rail all-to-all rows: profile (the profile's interconnect.inter_node.pxn), on, off")
      ->check(CLI::IsMember({"profile", "on", "off"}));

  auto ep = std::make_shared<EpArgs>();
  auto* e = add_sub(cost, "ep", "one EP dispatch or combine by every transport: time, bytes per link, SMs", ep->c);
  e->add_option("--bytes", ep->bytes, "the rank's routed rows, every top-k copy (256MiB, 1GiB)")->required();
  e->add_option("--ranks", ep->ranks, "EP-MP group size")->required()->check(positive_number());
  e->add_option("--ranks-per-node", ep->ranks_per_node, "group ranks per NVLink domain (default: fill domains)")
      ->check(positive_number());
  e->add_option("--top-k", ep->top_k, "routed experts per token")->required()->check(positive_number());
  e->add_option("--experts", ep->experts, "routed experts of the layer")->required()->check(positive_number());
  e->add_option(
       "--pxn", ep->pxn,
       "NCCL PXN relay for cross-rail all-to-all rows: profile (the profile's interconnect.inter_node.pxn), on, off")
      ->check(CLI::IsMember({"profile", "on", "off"}));
  e->add_option("--sms", ep->sms, "SMs for HybridEP (default 32 in one domain, 8 across)")->check(CLI::Range(1, 1024));

  auto gemm = std::make_shared<GemmArgs>();
  auto* g = add_sub(cost, "gemm", "dense BF16 GEMM [M,K] x [K,N]", gemm->c);
  g->add_option("--m", gemm->m, "rows")->required()->check(positive_number());
  g->add_option("--n", gemm->n, "output columns")->required()->check(positive_number());
  g->add_option("--k", gemm->k, "reduction dimension")->required()->check(positive_number());
  g->add_option("--pass", gemm->pass, "forward, dgrad (input gradient) or wgrad (weight gradient)")
      ->check(CLI::IsMember({"forward", "dgrad", "wgrad"}));

  auto grp = std::make_shared<GroupedArgs>();
  auto* gg = add_sub(cost, "grouped-gemm", "grouped BF16 GEMM over experts (uniform rows or --rows)", grp->c);
  gg->add_option("--experts", grp->experts, "experts in the group")->check(positive_number());
  gg->add_option("--tokens", grp->tokens, "tokens routed (rows before top-k)")->check(positive_number());
  gg->add_option("--top-k", grp->top_k, "experts per token")->check(positive_number());
  gg->add_option("--rows", grp->rows, "explicit rows per expert, e.g. --rows 512,2048,0")->delimiter(',');
  gg->add_option("--n", grp->n, "output columns")->required()->check(positive_number());
  gg->add_option("--k", grp->k, "reduction dimension")->required()->check(positive_number());
  gg->add_option("--pass", grp->pass, "forward, dgrad (input gradient) or wgrad (weight gradient)")
      ->check(CLI::IsMember({"forward", "dgrad", "wgrad"}));

  auto att = std::make_shared<AttentionArgs>();
  auto* at = add_sub(cost, "attention", "flash attention forward and backward", att->c);
  at->add_option("--sequences", att->sequences, "sequences in the microbatch")->check(positive_number());
  at->add_option("--seq-len", att->seq_len, "tokens per sequence")->required()->check(positive_number());
  at->add_option("--heads", att->heads, "query heads")->required()->check(positive_number());
  at->add_option("--kv-heads", att->kv_heads, "key/value heads (default: = heads)")->check(positive_number());
  at->add_option("--head-dim", att->head_dim, "head dimension")->required()->check(positive_number());
  at->add_flag("--no-causal", att->no_causal, "full (non-causal) attention");
  at->add_option("--v-head-dim", att->v_head_dim, "value head dimension (default: = head-dim; MLA: 128 against 192)")
      ->check(positive_number());
  at->add_option("--window", att->window, "sliding window in keys (causal)")->check(positive_number());

  auto mem = std::make_shared<MemoryArgs>();
  auto* me = add_sub(cost, "memory", "memory-bound kernel: bytes read + written", mem->c);
  me->add_option("--bytes", mem->bytes, "bytes moved (4096, 256MiB, 1GiB)")->required();
  me->add_option("--kernel", mem->kernel, "kernel class: copy, elementwise, permute, cross_entropy or optimizer")
      ->check(CLI::IsMember({"copy", "elementwise", "permute", "cross_entropy", "optimizer"}));

  return [=]() -> int {
    if (!cost->parsed()) return -1;
    if (*listing) {
      const auto families = registered_models();
      emit(*list, model_listing(families), model_listing_json(families));
      return 0;
    }
    if (c->parsed()) return naming_options(*c, [&] { return run_collective(*col); });
    if (e->parsed()) return naming_options(*e, [&] { return run_ep(*ep); });
    if (g->parsed()) return naming_options(*g, [&] { return run_gemm(*gemm); });
    if (gg->parsed()) return naming_options(*gg, [&] { return run_grouped(*grp); });
    if (at->parsed()) return naming_options(*at, [&] { return run_attention(*att); });
    if (me->parsed()) return naming_options(*me, [&] { return run_memory(*mem); });
    throw InputError(
        "moesim cost", "",
        "give a kernel or collective to price (collective, ep, gemm, grouped-gemm, attention, memory) or --list");
  };
}

}  // namespace moesim::cli
