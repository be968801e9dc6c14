// How `moesim validate` prints its checks: a published range is printed as a range, with the
// distance to it, not as the point of it nearest the prediction.
#include <catch2/catch.hpp>

#include "reports/validation_report.hpp"
#include "studies/validation.hpp"

using namespace moesim;

TEST_CASE("A range record prints the range and the distance to it", "[unit]") {
  ValidationReport r;
  r.name = "seed";
  r.file = "seed.json";
  ValidationRecord rec;
  rec.id = "fig8b-ddp-ep8-range";
  rec.kind = "step_range";
  ValidationCheck inside{"mfu@architecture.moe.num_experts=32", 43.2, 43.2, 0, 2, true, true, 42, 44};
  ValidationCheck above{"mfu@architecture.moe.num_experts=8", 44.57, 44, 0.57, 2, true, true, 42, 44};
  ValidationCheck below{"mfu@architecture.moe.num_experts=128", 39.5, 42, -2.5, 2, false, true, 42, 44};
  rec.checks = {inside, above, below};
  r.records.push_back(rec);
  const std::string text = validation_table(r);
  CHECK(text.find("predicted 43.2, published 42-44, inside the range (tolerance 2)") != std::string::npos);
  CHECK(text.find("predicted 44.57, published 42-44, above it by 0.57 pts (tolerance 2)") != std::string::npos);
  CHECK(text.find("predicted 39.5, published 42-44, below it by 2.5 pts (tolerance 2)  <- outside") !=
        std::string::npos);
  CHECK(text.find("published 44,") == std::string::npos);
  const nlohmann::json doc = validation_json(r);
  CHECK(doc["records"][0]["checks"][1]["measured_range"] == nlohmann::json::array({42.0, 44.0}));
}
