#include "models/plan/pipeline_layout.hpp"

#include <regex>

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

std::int64_t layout_mtp_layers(const PipelineLayout& layout) {
  std::int64_t n = 0;
  for (const auto& s : layout.stages) n += s.mtp;
  return n;
}

}  // namespace moesim
