// A self-contained HTML page (works offline) for a sweep document: the plots planners expect,
// the published measurements that match its points, a comparison's crossovers and memory walls,
// and a table of all points. See reports/README.md.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "studies/published.hpp"

namespace moesim {

// `published`: measurements to draw beside the points they match; `comparison`: a
// moesim-compare/1 document whose crossovers and expert walls the page shows (and then titles
// itself a comparison), or null for a plain sweep.
std::string html_report(const nlohmann::json& sweep_document, const PublishedOverlay& published = {},
                        const nlohmann::json& comparison = nullptr);

// The published block the page embeds: {"datasets": [...], "measurements": [...]}, each
// measurement with the index of the point it belongs to and only the metrics it has.
nlohmann::json published_json(const PublishedOverlay& published);

}  // namespace moesim
