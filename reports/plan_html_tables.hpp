// The plan page's tables (reports/plan_html.cpp), rendered as static HTML so they read without
// scripts: the request and the search's counts, the top K, the best plan against the runner-up
// phase by phase, the best plan of each design family, and every candidate that passed the
// rules. Also the plans as rows, read once from the document and shared with the chart.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "reports/document_reader.hpp"

namespace moesim {

// One entry of the document's plans, checked as it is read (a missing key or a bad status throws
// std::invalid_argument naming its JSON path). The replay fields are set only when replayed.
struct PlanRow {
  long long candidate = 0;
  std::string design;
  std::string values_text;  // "design=ddp · ep=8 · pp=1", in the order of the document's space
  std::string status;       // replayed, pruned_by_memory or pruned_by_bound
  bool fits = false;
  double peak_reserved_GiB = 0;
  double headroom_GiB = 0;
  double bound_step_time_s = 0;
  double bound_tokens_per_s_per_gpu = 0;
  bool replayed = false;
  double step_time_s = 0;
  double tokens_per_s_per_gpu = 0;
  double mfu = 0;
  std::string largest_exposed_phase;
  std::optional<long long> rank;
};

std::vector<PlanRow> plan_rows(const DocumentNode& plan_document);
// The row of the candidate `candidate` names; throws naming its path when there is none.
const PlanRow& plan_of(const std::vector<PlanRow>& plans, const DocumentNode& candidate);

// Each returns a fragment of the page's <main>; every text in it is HTML-escaped.
std::string request_tables_html(const DocumentNode& plan_document);
std::string top_table_html(const DocumentNode& plan_document, const std::vector<PlanRow>& plans);
std::string runner_up_html(const DocumentNode& plan_document, const std::vector<PlanRow>& plans);
std::string families_table_html(const DocumentNode& plan_document);
std::string plans_table_html(const std::vector<PlanRow>& plans);

}  // namespace moesim
