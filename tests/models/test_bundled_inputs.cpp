// Bundled inputs are found from any folder: `validate`'s datasets and `--profile NAME`
// (hardware_profiles/NAME.json), through the folders above the binary or MOESIM_DATA_DIR; when
// they are nowhere the error says where it looked and how to point there.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <cstdlib>
#include <filesystem>

#include "models/common/bundled_data.hpp"
#include "models/hw/profile_lookup.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;
using Catch::Contains;
namespace fs = std::filesystem;

namespace {

struct CliRun {
  int rc = -1;
  std::string err;
};

// `moesim ARGS` run from `folder`, its standard error kept.
CliRun cli_in(const std::string& folder, const std::string& args) {
  const std::string err = folder + "/stderr.txt";
  const std::string line =
      "cd '" + folder + "' && " + std::string(MOESIM_CLI) + " " + args + " >/dev/null 2>'" + err + "'";
  const int status = std::system(line.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, test::slurp(err)};
}

// Runs `body` with the current directory set to `folder`, restoring it after.
template <class Body>
void in_folder(const std::string& folder, Body body) {
  const fs::path before = fs::current_path();
  fs::current_path(folder);
  try {
    body();
  } catch (...) {
    fs::current_path(before);
    throw;
  }
  fs::current_path(before);
}

}  // namespace

TEST_CASE("Bundled files are found from outside the checkout, above the binary", "[unit]") {
  test::TempDir dir;
  in_folder(dir.path(""), [] {
    const auto seed = find_bundled("scenarios/validation/seed.json");
    REQUIRE(seed.has_value());
    CHECK(fs::equivalent(*seed, test::source_path("scenarios/validation/seed.json")));
    CHECK(fs::equivalent(resolve_profile("b300-hgx"), test::source_path("hardware_profiles/b300-hgx.json")));
    const auto names = bundled_profile_names();
    CHECK(std::find(names.begin(), names.end(), "h200-hgx") != names.end());
    try {
      require_bundled("scenarios/validation/no-such-dataset.json");
      FAIL("found a file that does not exist");
    } catch (const InputError& e) {
      CHECK(e.file() == "scenarios/validation/no-such-dataset.json");
      CHECK_THAT(e.message(), Contains("looked in: " + fs::current_path().string()));
      CHECK_THAT(e.message(), Contains("MOESIM_DATA_DIR="));
    }
  });
}

TEST_CASE("MOESIM_DATA_DIR is searched first", "[unit]") {
  test::TempDir dir;
  fs::create_directories(dir.path("hardware_profiles"));
  dir.write("hardware_profiles/mine.json", "{}");
  ::setenv(kDataDirVariable, dir.path("").c_str(), 1);
  const auto roots = bundled_data_roots();
  const std::string found = resolve_profile("mine");
  const auto names = bundled_profile_names();
  ::unsetenv(kDataDirVariable);
  REQUIRE_FALSE(roots.empty());
  CHECK(fs::equivalent(roots.front(), dir.path("")));
  CHECK(fs::equivalent(found, dir.path("hardware_profiles/mine.json")));
  CHECK(names == std::vector<std::string>{"mine"});
}

TEST_CASE("A profile argument that looks like a path is read as one", "[unit]") {
  CHECK(resolve_profile("profiles/x.json") == "profiles/x.json");
  CHECK(resolve_profile("x.json") == "x.json");
  const std::string real = test::source_path("hardware_profiles/h100-hgx.json");
  CHECK(resolve_profile(real) == real);
}

TEST_CASE("validate outside the checkout finds its dataset or says where it looked", "[unit]") {
  test::TempDir dir;
  const CliRun missing = cli_in(dir.path(""), "validate scenarios/validation/no-such.json");
  CHECK(missing.rc == 2);
  CHECK_THAT(missing.err, Contains("scenarios/validation/no-such.json: bundled file not found; looked in: "));
  CHECK_THAT(missing.err, Contains("set MOESIM_DATA_DIR=<the moesim checkout>"));
  // The A100 dataset's relative path resolves above the binary; its scenarios relative to it.
  const CliRun found = cli_in(dir.path(""), "validate scenarios/validation/a100.json");
  INFO(found.err);
  CHECK(found.rc == 0);
}

TEST_CASE("Every scenario command's --profile takes a bundled profile's name", "[unit]") {
  test::TempDir dir;
  const std::string scenario = test::source_path("scenarios/fig8/moe-ddp.json");
  const std::string out = dir.path("step.json");
  REQUIRE(cli_in(dir.path(""), "simulate " + scenario + " --profile h200-hgx --json " + out).rc == 0);
  CHECK(nlohmann::json::parse(test::slurp(out))["hardware"] == "h200-hgx");
  // The profile replaces the scenario's hardware before any --set, wherever --set is written.
  REQUIRE(cli_in(dir.path(""), "simulate " + scenario +
                                   " --set hardware.gpu.peak_bf16_dense_TFLOPs.value=1000 --profile h200-hgx --json " +
                                   out)
              .rc == 0);
  const auto doc = nlohmann::json::parse(test::slurp(out));
  CHECK(doc["hardware"] == "h200-hgx");
  CHECK(doc["mfu_peak_TFLOPs"] == 1000);
  const std::string fig8a = test::source_path("scenarios/fig8/fig8a.json");
  for (const std::string& command : {"ledger " + scenario, "inventory " + scenario, "bench " + scenario + " --repeat 1",
                                     "sweep " + fig8a, "compare " + fig8a}) {
    INFO(command);
    CHECK(cli_in(dir.path(""), command + " --profile b300-hgx").rc == 0);
  }
  CHECK(cli_in(dir.path(""), "cost collective --profile b300-hgx --kind all_reduce --bytes 1GiB --ranks 8").rc == 0);
  const CliRun typo = cli_in(dir.path(""), "simulate " + scenario + " --profile b300-hgz");
  CHECK(typo.rc == 2);
  CHECK_THAT(typo.err, Contains("--profile: b300-hgz: no such profile file or bundled profile; did you mean "
                                "'b300-hgx'? bundled profiles: a100-sxm-40gb, a100-sxm-80gb, b200-hgx, b300-hgx"));
}
