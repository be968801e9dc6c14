// The command line's own errors: an unknown option is named with the closest option of its
// command, a missing command or argument names what is missing, `moesim help [COMMAND]` prints a
// command's help; every one exits 2 except help (0). The ledger header names the composed design.
#include <catch2/catch.hpp>

#include <string>

#include "tests/support/cli_run.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {
using Ran = test::CliRun;
Ran moesim_cli(const std::string& args) { return test::run_cli_captured(args); }

const std::string kScenario = test::source_path("scenarios/fig8/moe-ddp-ep8.json");
}  // namespace

TEST_CASE("an unknown option names itself and the closest option of its command", "[unit]") {
  const Ran typo = moesim_cli("simulate " + kScenario + " --jsno out.json");
  CHECK(typo.rc == 2);
  CHECK(typo.err ==
        "moesim: error: unknown option --jsno for `moesim simulate`; did you mean '--json'? "
        "`moesim simulate --help` lists its options\n");
  // In a nested command, and with the value written after '='.
  const Ran nested = moesim_cli("list stacks --jsn=x.json");
  CHECK(nested.rc == 2);
  CHECK_THAT(nested.err, Catch::Contains("unknown option --jsn for `moesim list stacks`; did you mean '--json'?"));
  // Before any command: moesim takes a command first.
  const Ran first = moesim_cli("--foo");
  CHECK(first.rc == 2);
  CHECK_THAT(first.err, Catch::StartsWith("moesim: error: unknown option --foo: moesim takes a command first ("));
  CHECK_THAT(first.err, Catch::Contains("simulate"));
  // A negative number is a value, not an option.
  CHECK(moesim_cli("simulate " + kScenario + " --set plan.nodes=-1").err.find("unknown option") == std::string::npos);
}

TEST_CASE("a missing command, option or argument is named", "[unit]") {
  const Ran none = moesim_cli("");
  CHECK(none.rc == 2);
  CHECK_THAT(none.err, Catch::StartsWith("moesim: error: a command is required: ledger, "));
  const Ran plan = moesim_cli("plan " + kScenario);
  CHECK(plan.rc == 2);
  CHECK(plan.err == "moesim: error: `moesim plan`: --gpus is required (`moesim plan --help` lists its options)\n");
  const Ran simulate = moesim_cli("simulate");
  CHECK(simulate.rc == 2);
  CHECK_THAT(simulate.err, Catch::Contains("`moesim simulate`: scenario is required"));
}

TEST_CASE("moesim help prints moesim's or a command's help, and an unknown command gets the closest name", "[unit]") {
  const Ran all = moesim_cli("help");
  CHECK(all.rc == 0);
  CHECK_THAT(all.out, Catch::Contains("simulate"));
  CHECK_THAT(all.out, Catch::Contains("plan"));
  const Ran stacks = moesim_cli("help list stacks");
  CHECK(stacks.rc == 0);
  CHECK(stacks.out == moesim_cli("list stacks --help").out);
  const Ran typo = moesim_cli("help simulat");
  CHECK(typo.rc == 2);
  CHECK_THAT(typo.err, Catch::Contains("\"moesim\" has no command \"simulat\"; did you mean 'simulate'?"));
}

TEST_CASE("the ledger header names the composed design", "[unit]") {
  const Ran ledger = moesim_cli("ledger " + kScenario);
  CHECK(ledger.rc == 0);
  CHECK_THAT(ledger.out, Catch::StartsWith("scenario fig8-moe-ddp-ep8  (design ddp+ep8, hardware b300-hgx)"));
}

TEST_CASE("an option without the one it needs, or with one it excludes, is named like any input error", "[unit]") {
  const Ran needs = moesim_cli("simulate " + kScenario + " --trace-ranks 0");
  CHECK(needs.rc == 2);
  CHECK(needs.err ==
        "moesim: error: `moesim simulate`: --trace-ranks requires --trace (`moesim simulate --help` lists its "
        "options)\n");
  const Ran excludes = moesim_cli("compare " + kScenario + " --stack olmo-core --design ddp");
  CHECK(excludes.rc == 2);
  CHECK_THAT(excludes.err, Catch::StartsWith("moesim: error: `moesim compare`: --"));
  CHECK_THAT(excludes.err, Catch::Contains("excludes"));
}
