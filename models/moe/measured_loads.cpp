#include "models/moe/measured_loads.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>

#include "models/common/errors.hpp"
#include "models/common/json_file.hpp"
#include "models/common/json_reader.hpp"

namespace moesim {

namespace {

const Range kCount{0.0, kMaxExactInteger};

MeasuredLayerLoad entry(const JsonReader& e, std::optional<std::int64_t>& layer) {
  MeasuredLayerLoad out;
  if (e.has("layer")) layer = e.integer("layer", Range::between(0, 1 << 20));
  out.tokens_per_expert = e.number_list("tokens_per_expert", kCount);
  if (e.has("capacity_factor")) out.capacity_factor = e.number("capacity_factor", Range::between(0.01, 1024));
  e.finish();
  return out;
}

void add(RoutingSpec& spec, std::optional<std::int64_t> layer, MeasuredLayerLoad load, const std::string& file,
         const std::string& where) {
  if (!layer) {
    if (spec.measured_default) throw InputError(file, where, "a second entry without a layer; allowed: one default");
    spec.measured_default = std::move(load);
    return;
  }
  if (!spec.measured.emplace(*layer, std::move(load)).second) {
    throw InputError(file, where,
                     "layer " + std::to_string(*layer) + " has a histogram already; allowed: one per layer");
  }
}

void read_entries(const std::vector<JsonReader>& entries, RoutingSpec& spec) {
  for (const JsonReader& e : entries) {
    std::optional<std::int64_t> layer;
    MeasuredLayerLoad load = entry(e, layer);
    add(spec, layer, std::move(load), e.file(), e.path());
  }
}

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> cells;
  std::stringstream ss(line);
  std::string cell;
  while (std::getline(ss, cell, ',')) {
    const auto a = cell.find_first_not_of(" \t\r"), b = cell.find_last_not_of(" \t\r");
    cells.push_back(a == std::string::npos ? "" : cell.substr(a, b - a + 1));
  }
  return cells;
}

// `layer,expert,tokens` rows; experts listed in any order, each once per layer.
void read_csv(const std::string& text, const std::string& file, RoutingSpec& spec) {
  std::stringstream in(text);
  std::string line;
  std::getline(in, line);
  if (split_csv(line) != std::vector<std::string>{"layer", "expert", "tokens"})
    throw InputError(file, "line 1", "the header must be 'layer,expert,tokens'");
  std::map<std::string, std::map<std::int64_t, double>> layers;
  for (int n = 2; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const auto cells = split_csv(line);
    const std::string where = "line " + std::to_string(n);
    std::size_t used = 0;
    try {
      if (cells.size() != 3) throw std::invalid_argument("cells");
      const std::int64_t expert = std::stoll(cells[1], &used);
      if (used != cells[1].size() || expert < 0) throw std::invalid_argument("expert");
      const double tokens = std::stod(cells[2], &used);
      if (used != cells[2].size() || !(tokens >= 0)) throw std::invalid_argument("tokens");
      if (cells[0] != "*") {
        const std::int64_t layer = std::stoll(cells[0], &used);
        if (used != cells[0].size() || layer < 0) throw std::invalid_argument("layer");
      }
      if (!layers[cells[0]].emplace(expert, tokens).second)
        throw InputError(file, where, "expert " + cells[1] + " of layer " + cells[0] + " appears twice");
    } catch (const std::logic_error&) {
      throw InputError(file, where,
                       "cannot read '" + line +
                           "'; allowed: LAYER,EXPERT,TOKENS with LAYER an integer >= 0 or *, "
                           "EXPERT an integer >= 0, TOKENS a number >= 0");
    }
  }
  for (const auto& [layer, experts] : layers) {
    MeasuredLayerLoad load;
    std::int64_t next = 0;
    for (const auto& [expert, tokens] : experts) {
      if (expert != next++)
        throw InputError(file, "layer " + layer, "expert " + std::to_string(next - 1) + " has no row; allowed: 0..N-1");
      load.tokens_per_expert.push_back(tokens);
    }
    add(spec, layer == "*" ? std::nullopt : std::optional<std::int64_t>(std::stoll(layer)), std::move(load), file,
        "layer " + layer);
  }
}

}  // namespace

void parse_measured_loads(const JsonReader& r, RoutingSpec& spec) {
  const bool inline_loads = r.has("expert_loads"), from_file = r.has("expert_loads_file");
  if (inline_loads == from_file) {
    r.fail(inline_loads ? "expert_loads_file" : "model",
           "measured routing needs exactly one of expert_loads (inline entries) and expert_loads_file");
  }
  if (inline_loads) {
    read_entries(r.object_list("expert_loads"), spec);
    return;
  }
  std::filesystem::path path = r.string("expert_loads_file");
  if (path.is_relative()) path = std::filesystem::path(r.file()).parent_path() / path;
  const std::string file = path.string();
  if (path.extension() == ".csv") {
    read_csv(read_text_file(file), file, spec);
    return;
  }
  const nlohmann::json doc = read_json_file(file);
  const JsonReader root(doc, file, "");
  read_entries(root.object_list("layers"), spec);
  root.finish();
}

void check_measured_loads(const RoutingSpec& spec, std::int64_t experts, const std::vector<std::int64_t>& moe_layers,
                          const std::function<void(const std::string&, const std::string&)>& fail) {
  const auto check = [&](const MeasuredLayerLoad& m, const std::string& what) {
    if (static_cast<std::int64_t>(m.tokens_per_expert.size()) != experts) {
      fail("routing.expert_loads", what + " has " + std::to_string(m.tokens_per_expert.size()) +
                                       " counts; allowed: one per routed expert (" + std::to_string(experts) + ")");
    }
    double sum = 0;
    for (double t : m.tokens_per_expert) sum += t;
    if (!(sum > 0)) fail("routing.expert_loads", what + " routes no token; allowed: counts with a positive sum");
  };
  for (const auto& [layer, m] : spec.measured) {
    if (std::find(moe_layers.begin(), moe_layers.end(), layer) == moe_layers.end())
      fail("routing.expert_loads", "layer " + std::to_string(layer) + " is not an MoE layer of the model");
    check(m, "layer " + std::to_string(layer));
  }
  if (spec.measured_default) check(*spec.measured_default, "the default entry");
  for (std::int64_t layer : moe_layers) {
    if (!spec.measured_default && !spec.measured.count(layer))
      fail("routing.expert_loads", "MoE layer " + std::to_string(layer) +
                                       " has no histogram; allowed: one per MoE layer, or an entry without a layer "
                                       "for the rest");
  }
}

}  // namespace moesim
