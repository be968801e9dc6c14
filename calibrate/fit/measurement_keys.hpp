// The keys each kind of measurement record may carry besides the ones the fitter reads, with their
// types (calibrate/harness/README.md, "Output"): checked so that a null, NaN-like or mistyped value
// is reported with its path even where the fitter does not use it.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/common/json_reader.hpp"

namespace moesim::fit::keys {

enum class T { integer, number, number_or_null, string, boolean, int_list, any };
using Keys = std::vector<std::pair<const char*, T>>;

const Keys& common_optional_keys();  // every record: iteration counts and the harness's statistics
const Keys& collective_keys();       // every collective record
// By kind family: the memory kinds share "memory"; all_reduce has none of its own.
const std::map<std::string, Keys>& kind_extra_keys();

// Type-checks an informational key when present.
void info(const JsonReader& r, const nlohmann::json& raw, const char* key, T type);

}  // namespace moesim::fit::keys
