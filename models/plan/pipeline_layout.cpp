#include "models/plan/pipeline_layout.hpp"

#include <algorithm>
#include <regex>
#include <utility>

namespace moesim {

namespace {

// More symbols than any layout of a model moesim reads (4096 layers a stage, 64 virtual stages a
// rank): a repeat count beyond it is a typing error, refused before the text is unrolled.
constexpr std::size_t kMaxUnrolledSymbols = 1 << 20;

// One of Megatron's unrolling passes: re.sub(pattern, group(1) * int(group(2)), text).
bool unroll(std::string& text, const std::regex& pattern, std::string& error) {
  std::string out;
  auto last = text.cbegin();
  for (std::sregex_iterator it(text.begin(), text.end(), pattern), end; it != end; ++it) {
    const std::smatch& m = *it;
    out.append(last, m[0].first);
    const std::string digits = m[2].str();
    const std::string unit = m[1].str();
    if (digits.size() > 7 || unit.size() * std::stoull(digits) > kMaxUnrolledSymbols) {
      error = "repeats \"" + unit + "\" " + digits + " times; allowed: at most " + std::to_string(kMaxUnrolledSymbols) +
              " symbols once unrolled";
      return false;
    }
    for (unsigned long long k = std::stoull(digits); k > 0; --k) out += unit;
    last = m[0].second;
    if (out.size() > kMaxUnrolledSymbols) {
      error = "unrolls to more than " + std::to_string(kMaxUnrolledSymbols) + " symbols";
      return false;
    }
  }
  out.append(last, text.cend());
  text = std::move(out);
  return true;
}

}  // namespace

PipelineLayout parse_pipeline_layout(std::string_view input) {
  PipelineLayout out;
  std::string text;
  for (const char c : input)
    if (c != ',') text += c;
  static const std::regex group(R"(\(([^)]+)\)\*(\d+))");
  static const std::regex single(R"((.)\*(\d+))");
  if (!unroll(text, group, out.error) || !unroll(text, single, out.error)) return out;
  out.stages.emplace_back();
  std::int64_t embeddings = 0, losses = 0;
  bool after_mtp = false, first = true;
  for (const char c : text) {
    PipelineLayoutStage& stage = out.stages.back();
    if (c == '|') {
      out.stages.emplace_back();
      continue;
    }
    if (c != 'E' && c != 't' && c != 'm' && c != 'L') {
      out.error = std::string("has the symbol '") + c +
                  "'; allowed: E (embedding), t (decoder layer), m (MTP layer), L (loss), '|' between stages, "
                  "(...)*N and x*N repeats, commas";
      return out;
    }
    if (first && c != 'E') {
      out.error = "starts with '" + std::string(1, c) + "'; the first layer must be the embedding E";
      return out;
    }
    first = false;
    if (c == 'E') {
      stage.embedding = true;
      ++embeddings;
    } else if (c == 'L') {
      stage.loss = true;
      ++losses;
    } else if (c == 'm') {
      ++stage.mtp;
      after_mtp = true;
    } else {
      if (after_mtp) {
        out.error = "has a decoder layer t after an MTP layer m; decoder layers come before the MTP layers";
        return out;
      }
      ++stage.decoder;
    }
  }
  if (first) out.error = "holds no layer; the first layer must be the embedding E";
  if (!out.error.empty()) return out;
  if (embeddings != 1) {
    out.error = "names the embedding E " + std::to_string(embeddings) + " times; allowed: once";
    return out;
  }
  if (losses != 1) {
    out.error = "names the loss L " + std::to_string(losses) + " times; allowed: once";
    return out;
  }
  const char last = text[text.find_last_not_of('|')];
  if (last != 'L') {
    out.error = "ends with '" + std::string(1, last) + "'; the last layer must be the loss L";
  } else if (!out.stages.back().loss) {
    out.error =
        "puts the loss L before an empty last stage; moesim runs the loss on the last virtual stage "
        "(allowed: L in the last stage)";
  } else if (!out.stages.front().embedding) {
    out.error =
        "puts the embedding E after an empty first stage; moesim runs the embedding on the first virtual "
        "stage (allowed: E in the first stage)";
  } else if (layout_mtp_layers(out) != out.stages.back().mtp) {
    out.error =
        "puts MTP layers m in a stage without the loss (Megatron's standalone MTP stage); moesim runs the "
        "MTP layers with the loss on the last virtual stage (allowed: every m in L's stage)";
  }
  return out;
}

std::vector<std::int64_t> layout_decoder_layers(const PipelineLayout& layout) {
  std::vector<std::int64_t> out;
  out.reserve(layout.stages.size());
  for (const auto& s : layout.stages) out.push_back(s.decoder);
  return out;
}

StageSplit megatron_stage_split(const MegatronSplit& keys, std::int64_t num_layers, std::int64_t pp,
                                std::int64_t chunks) {
  StageSplit out;
  const auto refuse = [&](std::string key, std::string error) {
    out.key = std::move(key);
    out.error = std::move(error);
    return out;
  };
  const auto n = [](std::int64_t v) { return std::to_string(v); };
  std::vector<std::int64_t> rank(static_cast<std::size_t>(pp), 0);
  if (keys.first_stage_layers > 0 || keys.last_stage_layers > 0) {
    std::int64_t middle_layers = num_layers, middle_ranks = pp;
    for (const auto& [key, count] : {std::pair{"first_stage_layers", keys.first_stage_layers},
                                     std::pair{"last_stage_layers", keys.last_stage_layers}}) {
      if (count == 0) continue;
      if (count % chunks != 0)
        return refuse(key, n(count) + " layers are not divisible by the " + n(chunks) + " model chunks of a stage");
      middle_layers -= count;
      --middle_ranks;
    }
    if (middle_ranks < 0 || (middle_layers != 0) != (middle_ranks != 0) || middle_layers < 0) {
      return refuse(keys.first_stage_layers > 0 ? "first_stage_layers" : "last_stage_layers",
                    n(middle_layers) + " middle layers remain for " + n(std::max<std::int64_t>(0, middle_ranks)) +
                        " middle stages of pipeline.degree " + n(pp) + " (num_layers " + n(num_layers) + ")");
    }
    if (middle_ranks > 0 && (middle_layers % middle_ranks != 0 || (middle_layers / middle_ranks) % chunks != 0)) {
      return refuse(keys.first_stage_layers > 0 ? "first_stage_layers" : "last_stage_layers",
                    "leaves " + n(middle_layers) + " layers for " + n(middle_ranks) +
                        " middle stages; allowed: a whole number per stage, divisible by the " + n(chunks) +
                        " model chunks of a stage");
    }
    std::fill(rank.begin(), rank.end(), middle_ranks > 0 ? middle_layers / middle_ranks : 0);
    if (keys.first_stage_layers > 0) rank.front() = keys.first_stage_layers;
    if (keys.last_stage_layers > 0) rank.back() = keys.last_stage_layers;
  } else {
    const std::int64_t counted = num_layers + (keys.account_for_embedding ? 1 : 0) + (keys.account_for_loss ? 1 : 0);
    const std::string key = keys.account_for_embedding ? "account_for_embedding" : "account_for_loss";
    if (counted % pp != 0 || (counted / pp) % chunks != 0) {
      return refuse(key, "counts " + n(counted) + " layers with the embedding or loss; allowed: divisible by " +
                             "pipeline.degree " + n(pp) + " x the " + n(chunks) + " model chunks of a stage");
    }
    std::fill(rank.begin(), rank.end(), counted / pp);
  }
  for (std::int64_t chunk = 0; chunk < chunks; ++chunk)
    for (std::int64_t stage = 0; stage < pp; ++stage)
      out.layers.push_back(rank[static_cast<std::size_t>(stage)] / chunks);
  // The embedding (loss) takes a layer's place on the first (last) virtual stage; each holds one
  // at least, since (num_layers + counted) / (PP x chunks) is whole and positive.
  if (keys.account_for_embedding) --out.layers.front();
  if (keys.account_for_loss) --out.layers.back();
  return out;
}

std::int64_t layout_mtp_layers(const PipelineLayout& layout) {
  std::int64_t n = 0;
  for (const auto& s : layout.stages) n += s.mtp;
  return n;
}

}  // namespace moesim
