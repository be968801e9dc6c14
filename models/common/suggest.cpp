#include "models/common/suggest.hpp"

#include <algorithm>

namespace moesim {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  // Three rows of the dynamic-programming table: the transposition looks two rows back.
  std::vector<std::size_t> before(b.size() + 1), previous(b.size() + 1), current(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) previous[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t substitute = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, substitute});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        current[j] = std::min(current[j], before[j - 2] + 1);
    }
    before.swap(previous);
    previous.swap(current);
  }
  return previous[b.size()];
}

std::string closest_match(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_distance = 0;
  for (const auto& c : candidates) {
    if (c == word) continue;
    const std::size_t d = edit_distance(word, c);
    // One typo in every four characters, plus one, is what a misspelling looks like; more
    // edits than that suggest an unrelated word ("zero3" is not "ddp").
    const std::size_t allowed = 1 + std::max(word.size(), c.size()) / 4;
    if (d <= allowed && (best.empty() || d < best_distance)) {
      best = c;
      best_distance = d;
    }
  }
  return best;
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates, std::string_view rest) {
  const std::string best = closest_match(word, candidates);
  std::string out = best.empty() ? std::string() : "; did you mean '" + best + "'?";
  if (!rest.empty()) out += (best.empty() ? "; " : " ") + std::string(rest);
  return out;
}

std::string comma_joined(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) {
    if (!out.empty()) out += ", ";
    out += w;
  }
  return out;
}

}  // namespace moesim
