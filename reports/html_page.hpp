// What every self-contained moesim page shares (the sweep page, reports/html_report.cpp, and the
// plan page, reports/plan_html.cpp): escaping text for HTML, embedding a JSON document in an
// inert <script> block, and filling a page template whose {{asset:NAME}} placeholders inline the
// embedded assets (reports/html/embed_assets.cmake), so the page works offline.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace moesim::html {

// `s` with & < > " ' written as entities, safe in element text and in quoted attributes.
std::string escape(std::string_view s);

// The document as the text of a <script type="application/json"> block (see html_page.cpp).
std::string script_json(const nlohmann::json& doc);

// A number as a reader writes it: 2250, not 2250.0.
std::string number_text(const nlohmann::json& v);

// "moesim VERSION", the page's generator.
std::string generator();

// Returns the text for a template's placeholder {{key}}, or nullopt for a key it does not know.
using PlaceholderText = std::function<std::optional<std::string>(std::string_view key)>;

// Copies the embedded template `page_asset` with every placeholder replaced: {{include:NAME}} by
// the embedded template NAME, filled the same way (html/page_top.html: the head, the error
// recorder and the header every page shares), {{asset:NAME}} by the embedded asset NAME (a vendored
// bundle without its source-map comment), {{generator}} by generator(), any other {{key}} by
// `text(key)`. Inserted text is not scanned again, so a bundle
// that happens to contain "{{" stays as it is. Throws std::logic_error for an unclosed or
// unknown placeholder (a template bug, not a user error).
std::string fill_page(std::string_view page_asset, const PlaceholderText& text);

}  // namespace moesim::html
