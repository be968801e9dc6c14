// The sweep's tally (studies/sweep_tally.hpp): counts and the best fitting point, the first of
// equal MFUs, the same whether the points come in one run or as ranks' slices merged in order.
#include <catch2/catch.hpp>

#include "studies/sweep_tally.hpp"

using namespace moesim;

namespace {

SweepPoint point(std::size_t index, double mfu, bool oom) {
  SweepPoint p;
  p.index = index;
  p.values = {{"plan.batch.rank_microbatch_sequences", static_cast<int>(index)}};
  p.ok = true;
  StepResult r;
  r.design = "ddp";
  r.mfu = mfu;
  r.tokens_per_s_per_gpu = 1000 * mfu;
  r.ledger.oom = oom;
  p.result = r;
  return p;
}

SweepPoint invalid(std::size_t index) {
  SweepPoint p;
  p.index = index;
  p.error = "EP 3 does not divide 8";
  return p;
}

}  // namespace

TEST_CASE("The sweep tally counts every point and keeps the first best fitting one", "[unit]") {
  const std::vector<SweepPoint> points = {point(0, 0.30, false), point(1, 0.45, true), invalid(2),
                                          point(3, 0.40, false), point(4, 0.40, false)};
  const SweepTally all = tally_of(points);
  CHECK(all.points == 5);
  CHECK(all.fit == 3);
  CHECK(all.oom == 1);
  CHECK(all.invalid == 1);
  REQUIRE(all.best);
  CHECK(all.best->index == 3);  // 0.45 is out of memory; of the two 0.40s the first
  CHECK(all.best->tokens_per_s_per_gpu == Approx(400));

  // Two ranks' slices, merged in rank order through their JSON, give the same tally.
  SweepTally merged = tally_from_json(tally_json(tally_of({points.begin(), points.begin() + 4})));
  merged.merge(tally_from_json(tally_json(tally_of({points.begin() + 4, points.end()}))));
  CHECK(merged.points == all.points);
  CHECK(merged.fit == all.fit);
  CHECK(merged.oom == all.oom);
  CHECK(merged.invalid == all.invalid);
  REQUIRE(merged.best);
  CHECK(merged.best->index == 3);
  CHECK(merged.best->values == all.best->values);
  CHECK(merged.best->design == "ddp");

  CHECK_FALSE(tally_of({invalid(0), point(1, 0.5, true)}).best);
}
