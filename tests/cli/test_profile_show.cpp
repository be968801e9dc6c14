// `moesim profile show`: every field of a bundled profile with its provenance, counted by kind,
// the dominant kernels' basis, the JSON listing, and a bad profile refused with its path.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <string>

#include <sys/wait.h>
#include <nlohmann/json.hpp>

#include "models/common/json_file.hpp"
#include "models/hw/profile_lookup.hpp"
#include "models/hw/profile_provenance.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;

namespace {
int run(const test::TempDir& dir, const std::string& args, std::string& out, std::string& err) {
  const std::string o = dir.path("stdout.txt"), e = dir.path("stderr.txt");
  const int status = std::system((std::string(MOESIM_CLI) + " " + args + " >" + o + " 2>" + e).c_str());
  out = test::slurp(o);
  err = test::slurp(e);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}
}  // namespace

TEST_CASE("every field of a bundled profile is listed once with its kind", "[unit]") {
  for (const auto& name : bundled_profile_names()) {
    INFO(name);
    const std::string file = test::source_path("hardware_profiles/" + name + ".json");
    const auto p = profile_provenance(read_ordered_json_file(file), file);
    CHECK(p->name == name);
    CHECK(p->entries.size() > 40);
    std::size_t counted = 0;
    for (const auto& [kind, n] : p->by_kind) {
      CHECK((kind == "datasheet" || kind == "published" || kind == "fitted" || kind == "assumption"));
      counted += n;
    }
    CHECK(counted == p->entries.size());
    for (const auto& e : p->entries) {
      INFO(e.path);
      CHECK_FALSE(e.source.empty());
      CHECK_FALSE(e.value.empty());
    }
    REQUIRE(p->dominant.size() == 3);
    CHECK(p->dominant[0].kernel_class == "dense GEMM");
    CHECK(p->dominant[0].fields.front()->path == "compute.gemm_bf16_TFLOPs_by_rows");
  }
}

TEST_CASE("moesim profile show names each field's basis and what the dominant kernels rest on", "[unit]") {
  test::TempDir dir;
  std::string out, err;
  REQUIRE(run(dir, "profile show h200-hgx --json " + dir.path("p.json"), out, err) == 0);
  INFO(out + err);
  // The H200's GEMM tables and attention rates are measured (calibrate/measured/).
  CHECK(out.find("dense GEMM: 3 fitted") != std::string::npos);
  CHECK(out.find("grouped GEMM: 3 fitted") != std::string::npos);
  CHECK(out.find("attention: 4 fitted\n") != std::string::npos);  // the two rates and their tables by length
  CHECK(out.find("compute.gemm_bf16_TFLOPs_by_rows") != std::string::npos);
  CHECK(out.find("10 points (rows 128 to 65536)") != std::string::npos);
  const auto doc = nlohmann::json::parse(test::slurp(dir.path("p.json")));
  CHECK(doc.at("schema") == "moesim-profile-provenance/1");
  CHECK(doc.at("by_kind").at("fitted") == 21);  // 15, the two other attention kernels' rates, the tables by length
  CHECK(doc.at("dominant_kernels")[2].at("rests_on_assumption") == false);
  // The H100's attention and forward GEMM table are published H100 runs; its pass ratios, sustained
  // ceiling and grouped GEMM ratios come from the H200 (the same die), and the listing says so.
  REQUIRE(run(dir, "profile show h100-hgx", out, err) == 0);
  CHECK(out.find("attention: 4 published\n") != std::string::npos);
  CHECK(out.find("dense GEMM: 3 assumption, 1 published  <- rests on an assumption") != std::string::npos);
  CHECK(out.find("grouped GEMM: 3 assumption  <- rests on an assumption") != std::string::npos);
  // B200's GEMMs are SimuMax's Transformer Engine measurements on a B200, its attention that and
  // NVIDIA's cuDNN run by length.
  REQUIRE(run(dir, "profile show b200-hgx", out, err) == 0);
  CHECK(out.find("dense GEMM: 3 published\n") != std::string::npos);
  CHECK(out.find("grouped GEMM: 3 published\n") != std::string::npos);
  CHECK(out.find("attention: 4 published\n") != std::string::npos);
  // A whole source only with --full.
  REQUIRE(run(dir, "profile show h200-hgx --full", out, err) == 0);
  CHECK(out.find("(sources cut at") == std::string::npos);
}

TEST_CASE("moesim profile show refuses a bad profile with its path, and an unknown name", "[unit]") {
  test::TempDir dir;
  auto doc = nlohmann::json::parse(test::slurp(test::source_path("hardware_profiles/b300-hgx.json")));
  doc["gpu"]["hbm_bw_GBps"]["value"] = -1;
  const std::string bad = dir.write("bad.json", doc.dump());
  std::string out, err;
  CHECK(run(dir, "profile show " + bad, out, err) == 2);
  CHECK(err.find("gpu.hbm_bw_GBps") != std::string::npos);
  CHECK(out.empty());
  CHECK(run(dir, "profile show h300-hgx", out, err) == 2);
  CHECK(err.find("h200-hgx") != std::string::npos);  // the closest bundled name
}

TEST_CASE("simulate and plan say which dominant kernels the profile assumes", "[unit]") {
  test::TempDir dir;
  std::string out, err;
  const std::string moe = test::source_path("scenarios/fig8/moe-ddp.json");
  REQUIRE(run(dir, "simulate " + moe + " --profile h100-hgx", out, err) == 0);
  // Its dense table is published H100 runs, capped at the H200's sustained rate (an assumption).
  CHECK(out.find("basis    assumed in h100-hgx, not measured: dense GEMM rates and grouped GEMM efficiencies "
                 "(moesim profile show h100-hgx)") != std::string::npos);
  // B300's forward GEMM tables are published; their backward ratios are not.
  REQUIRE(run(dir, "simulate " + moe, out, err) == 0);
  CHECK(out.find("not measured: dense GEMM backward ratios, grouped GEMM backward ratios and attention rates") !=
        std::string::npos);
  // Every dominant kernel of the H200 is measured: no line.
  REQUIRE(run(dir, "simulate " + moe + " --profile h200-hgx", out, err) == 0);
  CHECK(out.find("basis ") == std::string::npos);
  // A dense model has no grouped GEMM to name.
  REQUIRE(run(dir, "simulate " + test::source_path("scenarios/fig8/dense-ddp.json") + " --profile h100-hgx", out,
              err) == 0);
  CHECK(out.find("not measured: dense GEMM rates (moesim profile show h100-hgx)") != std::string::npos);
  REQUIRE(run(dir, "plan " + test::source_path("scenarios/fig8/moe-ddp-ep8.json") + " --gpus 8 -j 1", out, err) == 0);
  CHECK(out.find("basis    assumed in b300-hgx") != std::string::npos);
}
