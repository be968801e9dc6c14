// "Did you mean": the closest of the allowed words to a misspelt one, for every error that
// names an unknown key or name (JSON keys, --set paths, design parts, registry names, bundled
// profiles). One distance for all of them, so every error suggests the same way.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace moesim {

// Edits (insert, delete, substitute, swap two neighbours) that turn `a` into `b`: the optimal
// string alignment distance (Damerau 1964, without repeated edits of one substring).
std::size_t edit_distance(std::string_view a, std::string_view b);

// The candidate closest to `word` when it is close enough to be a typo (at most one edit per
// four characters of the longer word, plus one; ties go to the first candidate); "" otherwise.
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);

// The words as errors list them: "a, b, c".
std::string comma_joined(const std::vector<std::string>& words);

// "; did you mean 'X'? REST" for the closest match X, else "; REST" (or "" when REST is empty):
// what follows the name of the unknown word in an error, e.g. REST = "allowed: a, b".
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates, std::string_view rest = "");

}  // namespace moesim
