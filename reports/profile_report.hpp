// `moesim profile show`: a hardware profile's fields with their provenance, counted by kind, and
// what the kernel classes that dominate a step rest on. Selects and formats; computes nothing.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "models/hw/profile_provenance.hpp"

namespace moesim {

// `source_width`: characters of each source shown in the table (0: whole).
std::string profile_provenance_table(const ProfileProvenance& p, std::size_t source_width);
nlohmann::json profile_provenance_json(const ProfileProvenance& p);

}  // namespace moesim
