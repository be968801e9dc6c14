// The HTML report's assets, compiled into the binary: the page template (page.html), its style
// (page.css), its scripts (charts.js, page.js) and the vendored Vega bundles (reports/vendor/).
// The definitions are generated at build time by reports/html/embed_assets.cmake.
#pragma once

#include <string_view>

namespace moesim::html_assets {

// The bytes of the asset with this file name; throws std::out_of_range for an unknown name.
std::string_view asset(std::string_view name);

}  // namespace moesim::html_assets
