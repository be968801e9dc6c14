// A self-contained HTML page (works offline) for a sweep document: the plots planners expect
// and a table of all points. See reports/README.md.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace moesim {

std::string html_report(const nlohmann::json& sweep_document);

}  // namespace moesim
