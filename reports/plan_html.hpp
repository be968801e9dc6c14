// A self-contained HTML page (works offline) for a moesim-plan/1 document, the planner's search
// over parallel plans (moesim plan --html): the request and what the search kept, the
// throughput-vs-memory frontier, the top K, the best plan against the runner-up and the best
// plan of each design family. See reports/README.md.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace moesim {

// A pure function of the document: the same document gives the same bytes. Throws
// std::invalid_argument naming the JSON path when the document does not follow
// reports/schema/moesim-plan.schema.json (a missing key, a wrong type, an unknown status).
std::string plan_html_report(const nlohmann::json& plan_document);

}  // namespace moesim
