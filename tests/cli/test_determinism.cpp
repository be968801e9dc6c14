// Determinism: identical inputs give byte-identical reports, whatever the thread count. Seeded
// random routing is used so that the seed, not luck, makes runs agree. (The MPI half is
// cli/mpi_sweep_test.sh, a CTest test of its own.)
#include <catch2/catch.hpp>

#include <string>

#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {
const std::string kRandomRouting = " --set plan.routing.model=random --set plan.routing.seed=7";
}

TEST_CASE("Determinism: moesim simulate gives byte-identical JSON and traces", "[unit][determinism]") {
  test::TempDir dir;
  const std::string scenario = test::source_path("scenarios/fig8/moe-ddp-ep8.json") + kRandomRouting;
  for (const char* run : {"a", "b"}) {
    REQUIRE(test::run_cli("simulate " + scenario + " --json " + dir.path(std::string(run) + ".json") + " --trace " +
                          dir.path(std::string(run) + ".trace")) == 0);
  }
  CHECK(test::slurp(dir.path("a.json")) == test::slurp(dir.path("b.json")));
  CHECK(test::slurp(dir.path("a.trace")) == test::slurp(dir.path("b.trace")));
  // A different seed changes the routing, so the check above is not vacuous.
  REQUIRE(test::run_cli("simulate " + scenario + " --set plan.routing.seed=8 --json " + dir.path("c.json")) == 0);
  CHECK(test::slurp(dir.path("a.json")) != test::slurp(dir.path("c.json")));
}

TEST_CASE("Determinism: moesim sweep is byte-identical for -j 1, -j 2 and -j 3", "[unit][determinism]") {
  test::TempDir dir;
  const std::string cmd = "sweep " + test::source_path("scenarios/fig8/fig8b.json") + kRandomRouting +
                          " --vary architecture.moe.num_experts=8,32,64 --vary design=ddp,fsdp,ddp+ep8";
  for (const char* j : {"1", "2", "3"}) {
    REQUIRE(test::run_cli(cmd + " -j " + j + " --json " + dir.path(std::string("s") + j + ".json") + " --csv " +
                          dir.path(std::string("s") + j + ".csv")) == 0);
  }
  for (const char* j : {"2", "3"}) {
    CHECK(test::slurp(dir.path("s1.json")) == test::slurp(dir.path(std::string("s") + j + ".json")));
    CHECK(test::slurp(dir.path("s1.csv")) == test::slurp(dir.path(std::string("s") + j + ".csv")));
  }
}

TEST_CASE("Determinism: moesim compare is byte-identical across runs and thread counts", "[unit][determinism]") {
  test::TempDir dir;
  const std::string cmd = "compare " + test::source_path("scenarios/fig8/moe-ddp.json") + kRandomRouting +
                          " --design fsdp --design ddp+ep8";
  REQUIRE(test::run_cli(cmd + " -j 1 --json " + dir.path("c1.json") + " --csv " + dir.path("c1.csv")) == 0);
  REQUIRE(test::run_cli(cmd + " -j 2 --json " + dir.path("c2.json") + " --csv " + dir.path("c2.csv")) == 0);
  REQUIRE(test::run_cli(cmd + " -j 2 --json " + dir.path("c3.json")) == 0);
  CHECK(test::slurp(dir.path("c1.json")) == test::slurp(dir.path("c2.json")));
  CHECK(test::slurp(dir.path("c1.json")) == test::slurp(dir.path("c3.json")));
  CHECK(test::slurp(dir.path("c1.csv")) == test::slurp(dir.path("c2.csv")));
}
