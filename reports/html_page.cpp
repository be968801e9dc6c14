// The page template filler and the escaping every moesim page uses (reports/html_page.hpp).
#include "reports/html_page.hpp"

#include <cstdio>
#include <stdexcept>

#include "reports/html/embedded_assets.hpp"
#include "reports/text_format.hpp"

#ifndef MOESIM_VERSION
#define MOESIM_VERSION "unknown"
#endif

namespace moesim::html {

namespace {

// A vendored bundle without its trailing source-map comment: the map is not shipped, and a
// page that works offline should name no file it cannot have.
std::string_view without_source_map(std::string_view js) {
  const auto at = js.rfind("//# sourceMappingURL=");
  return at == std::string_view::npos ? js : js.substr(0, at);
}

}  // namespace

std::string escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

// "<" only occurs inside JSON strings, where \u003c means the same character, so neither
// "</script" nor "<!--" can close or confuse the block and JSON.parse gives back the document
// unchanged.
std::string script_json(const nlohmann::json& doc) {
  const std::string text = doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size() + text.size() / 64);
  for (char c : text) {
    if (c == '<')
      out += "\\u003c";
    else
      out += c;
  }
  return out;
}

std::string number_text(const nlohmann::json& v) {
  if (!v.is_number_float()) return json_value_text(v);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v.get<double>());
  return buf;
}

std::string generator() { return "moesim " MOESIM_VERSION; }

std::string fill_page(std::string_view page_asset, const PlaceholderText& text) {
  const std::string_view page = html_assets::asset(page_asset);
  std::string out;
  out.reserve(1u << 20);  // the vendored bundles alone are about a megabyte
  std::size_t at = 0;
  while (true) {
    const auto open = page.find("{{", at);
    out.append(page.substr(at, open == std::string_view::npos ? std::string_view::npos : open - at));
    if (open == std::string_view::npos) break;
    const auto close = page.find("}}", open);
    if (close == std::string_view::npos) throw std::logic_error(std::string(page_asset) + ": unclosed {{ placeholder");
    const std::string_view key = page.substr(open + 2, close - open - 2);
    if (key.starts_with("include:")) {
      out += fill_page(key.substr(8), text);
    } else if (key.starts_with("asset:")) {
      out.append(without_source_map(html_assets::asset(key.substr(6))));
    } else if (key == "generator") {
      out += generator();
    } else if (const auto value = text(key)) {
      out += *value;
    } else {
      throw std::logic_error(std::string(page_asset) + ": unknown placeholder {{" + std::string(key) + "}}");
    }
    at = close + 2;
  }
  return out;
}

}  // namespace moesim::html
