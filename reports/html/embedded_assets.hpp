// The HTML pages' assets, compiled into the binary: the sweep page's template (page.html), style
// (page.css) and scripts (page_errors.js, charts_marks.js, charts.js, page.js), the plan page's
// (plan_page.html, plan_page.css, plan_page.js) and the vendored Vega bundles (reports/vendor/).
// The definitions are generated at build time by reports/html/embed_assets.cmake.
#pragma once

#include <string_view>

namespace moesim::html_assets {

// The bytes of the asset with this file name; throws std::out_of_range for an unknown name.
std::string_view asset(std::string_view name);

}  // namespace moesim::html_assets
