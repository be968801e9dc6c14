#include "studies/sweep_tally.hpp"

namespace moesim {

namespace {

void consider(std::optional<SweepBest>& best, SweepBest candidate) {
  if (!best || candidate.mfu > best->mfu) best = std::move(candidate);
}

}  // namespace

void SweepTally::add(const SweepPoint& p) {
  ++points;
  if (!p.ok) {
    ++invalid;
    return;
  }
  const StepResult& r = *p.result;
  if (r.ledger.oom) {
    ++oom;
    return;
  }
  ++fit;
  consider(best, {p.index, p.values, r.design, r.mfu, r.tokens_per_s_per_gpu});
}

void SweepTally::merge(const SweepTally& later) {
  points += later.points;
  fit += later.fit;
  oom += later.oom;
  invalid += later.invalid;
  if (later.best) consider(best, *later.best);
}

SweepTally tally_of(const std::vector<SweepPoint>& points) {
  SweepTally t;
  for (const auto& p : points) t.add(p);
  return t;
}

nlohmann::json tally_json(const SweepTally& t) {
  nlohmann::json j = {{"points", t.points}, {"fit", t.fit}, {"oom", t.oom}, {"invalid", t.invalid}};
  if (t.best) {
    nlohmann::json values = nlohmann::json::array();
    for (const auto& [path, value] : t.best->values) values.push_back({path, value});
    j["best"] = {{"index", t.best->index},
                 {"values", values},
                 {"design", t.best->design},
                 {"mfu", t.best->mfu},
                 {"tps", t.best->tokens_per_s_per_gpu}};
  }
  return j;
}

SweepTally tally_from_json(const nlohmann::json& j) {
  SweepTally t;
  t.points = j.at("points").get<std::size_t>();
  t.fit = j.at("fit").get<std::size_t>();
  t.oom = j.at("oom").get<std::size_t>();
  t.invalid = j.at("invalid").get<std::size_t>();
  if (j.contains("best")) {
    const auto& b = j.at("best");
    SweepBest best;
    best.index = b.at("index").get<std::size_t>();
    for (const auto& pair : b.at("values")) best.values.emplace_back(pair.at(0).get<std::string>(), pair.at(1));
    best.design = b.at("design").get<std::string>();
    best.mfu = b.at("mfu").get<double>();
    best.tokens_per_s_per_gpu = b.at("tps").get<double>();
    t.best = std::move(best);
  }
  return t;
}

}  // namespace moesim
