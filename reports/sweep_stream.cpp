#include "reports/sweep_stream.hpp"

#include <stdexcept>

#include "reports/sweep_report.hpp"

namespace moesim {

namespace {

// Where the points go in the framing document's text: nlohmann's dump writes an empty array
// as "[]" and the document's keys in sorted order ("axes" < "detail" < "inputs" < "points"...),
// a top-level key after a newline and two spaces (a key inside "inputs" sits deeper).
constexpr std::string_view kPointsSlot = "\n  \"points\": []";

// The text of a point as an element of the document's "points" array: json_text's two-space
// indent, shifted by the two levels the array sits at. JSON strings hold no raw newline, so
// every line break is one of dump's. Copied line by line.
std::string element_text(const nlohmann::json& point) {
  const std::string text = json_text(point);
  constexpr std::string_view kShift = "    ";
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  const std::size_t end = text.empty() ? 0 : text.size() - 1;  // the final newline is the array's
  for (std::size_t at = 0; at < end;) {
    std::size_t line_end = text.find('\n', at);
    if (line_end == std::string::npos || line_end > end) line_end = end;
    out += kShift;
    out.append(text, at, line_end - at);
    if (line_end < end) out += '\n';
    at = line_end + 1;
  }
  return out;
}

}  // namespace

SweepStream::SweepStream(const std::string& scenario_name, const SweepSpec& spec, std::string json_path,
                         std::string csv_path, const nlohmann::json& inputs)
    : json_path_(std::move(json_path)),
      csv_path_(std::move(csv_path)),
      frame_(sweep_document(scenario_name, spec, nlohmann::json::array(), inputs)),
      columns_(csv_value_columns(varied_paths(spec))) {
  const std::string text = json_text(frame_);
  const std::size_t at = text.find(kPointsSlot);
  if (at == std::string::npos) throw std::logic_error("sweep document without a points array");
  json_head_ = text.substr(0, at + kPointsSlot.size() - 1);  // up to and including "["
}

SweepStream::Pieces SweepStream::render(const nlohmann::json& point) const {
  Pieces p;
  if (!json_path_.empty()) {
    p.json = points_ == 1 ? "\n" : ",\n";
    p.json += element_text(point);
  }
  if (!csv_path_.empty()) p.csv = sweep_csv_row(point, columns_);
  return p;
}

void SweepStream::open() {
  if (!json_path_.empty()) {
    json_.emplace(json_path_);
    json_->write(json_head_);
  }
  if (!csv_path_.empty()) {
    csv_.emplace(csv_path_);
    csv_->write(sweep_csv_header(columns_));
  }
}

void SweepStream::write(const Pieces& pieces) {
  if (json_) json_->write(pieces.json);
  if (csv_) csv_->write(pieces.csv);
}

void SweepStream::add(const nlohmann::json& point) {
  ++points_;
  const bool ok = point.at("status") == "ok";
  if (!ok) ++invalid_;
  Pieces pieces = render(point);
  if (!ok && valid_ == 0) {
    held_.push_back(std::move(pieces));
    return;
  }
  if (valid_++ == 0) {
    open();
    for (const auto& h : held_) write(h);
    held_.clear();
  }
  write(pieces);
}

void SweepStream::finish() {
  if (valid_ == 0) throw std::logic_error("a sweep stream finished without a valid point");
  frame_["summary"] = sweep_summary(points_, invalid_);
  const std::string text = json_text(frame_);
  const std::size_t at = text.find(kPointsSlot) + kPointsSlot.size() - 1;  // at the "]"
  if (json_) {
    json_->write("\n  ");
    json_->write(std::string_view(text).substr(at));
    json_->commit();
  }
  if (csv_) csv_->commit();
}

}  // namespace moesim
