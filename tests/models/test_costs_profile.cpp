// The hardware profile's cost sections: every bundled profile parses, and a bad table or a bad
// interconnect entry is an error naming the exact JSON path.
#include <catch2/catch.hpp>

#include <filesystem>
#include <functional>

#include "models/common/json_reader.hpp"
#include "models/hw/hardware_profile.hpp"
#include "models/input/scenario.hpp"
#include "tests/support/fixtures.hpp"

using namespace moesim;
using nlohmann::json;

namespace {
json b300_doc() { return read_json_file(test::source_path("hardware_profiles/b300-hgx.json")); }

HardwareProfile parse(const json& doc) { return parse_hardware_profile(JsonReader(doc, "profile.json", "")); }

struct BadProfile {
  std::string what;
  std::function<void(json&)> mutate;
  std::string path;
  std::string message;
};
}  // namespace

TEST_CASE("Every bundled hardware profile parses with its cost sections", "[unit]") {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(test::source_path("hardware_profiles"))) {
    if (entry.path().extension() != ".json") continue;
    INFO(entry.path());
    const json doc = read_json_file(entry.path().string());
    const HardwareProfile hw = parse_hardware_profile(JsonReader(doc, entry.path().string(), ""));
    ++count;
    CHECK(hw.compute.gemm_bf16_TFLOPs_by_rows.points().size() >= 2);
    CHECK_FALSE(hw.compute.gemm_bf16_TFLOPs_by_rows.source.empty());
    // Sustained rates sit below the nominal peak: a profile is never tuned above its datasheet.
    for (const auto& p : hw.compute.gemm_bf16_TFLOPs_by_rows.points()) CHECK(p.y < hw.gpu.peak_bf16_TFLOPs.value);
    CHECK(hw.compute.attention_fwd_TFLOPs.value < hw.gpu.peak_bf16_TFLOPs.value);
    CHECK(hw.compute.hbm_sustained_GBps.value <= hw.gpu.hbm_bw_GBps.value);
    CHECK(hw.interconnect.intra_node.domain_gpus.value >= hw.node.gpus_per_node.value);
    CHECK(hw.interconnect.intra_node.ring.busbw_efficiency.all_reduce.has_value());
    CHECK(hw.interference.compute_slowdown_with_comm.value > 0);
  }
  CHECK(count >= 6);
}

TEST_CASE("B300 profile carries the published kernel numbers", "[unit]") {
  const HardwareProfile hw = parse(b300_doc());
  const auto& g = hw.compute.gemm_bf16_TFLOPs_by_rows;
  REQUIRE(g.points().size() == 6);
  CHECK(g.points().front().x == 128);
  CHECK(g.points().front().y == 854);
  CHECK(g.points().back().x == 65536);
  CHECK(g.points().back().y == 1411);
  CHECK(g.kind == SourceKind::published);
  CHECK(hw.interference.compute_slowdown_with_comm.value == Approx(0.25));
  CHECK(hw.interconnect.intra_node.nvls.has_value());
  // 695 and 845 GB/s busbw over 900 GB/s NVLink 5 (nccl issue 2140).
  CHECK(hw.interconnect.intra_node.ring.busbw_efficiency.all_reduce->value * 900 == Approx(695).epsilon(0.01));
  CHECK(hw.interconnect.intra_node.nvls->busbw_efficiency.all_reduce->value * 900 == Approx(845).epsilon(0.01));
  // NVLS does not run all_gather unless a profile says so (nccl issue 1506).
  CHECK_FALSE(hw.interconnect.intra_node.nvls->busbw_efficiency.all_gather.has_value());
}

TEST_CASE("Bad cost sections name the exact JSON path", "[unit]") {
  const std::string gemm = "compute.gemm_bf16_TFLOPs_by_rows";
  const std::vector<BadProfile> cases = {
      {"empty table", [](json& d) { d["compute"]["gemm_bf16_TFLOPs_by_rows"]["points"] = json::array(); },
       gemm + ".points", "at least one point"},
      {"non-increasing rows", [](json& d) { d["compute"]["gemm_bf16_TFLOPs_by_rows"]["points"][3]["rows"] = 1024; },
       gemm + ".points[3].rows", "strictly increasing"},
      {"decreasing rows", [](json& d) { d["compute"]["gemm_bf16_TFLOPs_by_rows"]["points"][1]["rows"] = 64; },
       gemm + ".points[1].rows", "previous point's rows (128)"},
      {"zero rate", [](json& d) { d["compute"]["gemm_bf16_TFLOPs_by_rows"]["points"][2]["TFLOPs"] = 0; },
       gemm + ".points[2].TFLOPs", "out of range"},
      {"negative rows", [](json& d) { d["compute"]["gemm_bf16_TFLOPs_by_rows"]["points"][0]["rows"] = -1; },
       gemm + ".points[0].rows", "out of range"},
      {"table is not an array", [](json& d) { d["compute"]["gemm_bf16_TFLOPs_by_rows"]["points"] = 5; },
       gemm + ".points", "expected an array of objects"},
      {"point is not an object", [](json& d) { d["compute"]["gemm_bf16_TFLOPs_by_rows"]["points"][0] = 5; },
       gemm + ".points[0]", "expected an object"},
      {"unknown key in a point", [](json& d) { d["compute"]["gemm_bf16_TFLOPs_by_rows"]["points"][0]["tflops"] = 1; },
       gemm + ".points[0].tflops", "unknown key"},
      {"table without provenance", [](json& d) { d["compute"]["gemm_bf16_TFLOPs_by_rows"]["source"] = ""; },
       gemm + ".source", "where the number comes from"},
      {"grouped efficiency above 1.5",
       [](json& d) {
         d["compute"]["grouped_gemm_efficiency_by_rows_per_expert"]["points"][0]["fraction_of_dense"] = 2;
       },
       "compute.grouped_gemm_efficiency_by_rows_per_expert.points[0].fraction_of_dense", "out of range"},
      {"missing compute section", [](json& d) { d.erase("compute"); }, "compute", "required field is missing"},
      {"bare attention number", [](json& d) { d["compute"]["attention_fwd_TFLOPs"] = 1100; },
       "compute.attention_fwd_TFLOPs", "expected an object"},
      {"tree asked for all_gather",
       [](json& d) {
         d["interconnect"]["intra_node"]["tree"]["busbw_efficiency"]["all_gather"] =
             d["interconnect"]["intra_node"]["tree"]["busbw_efficiency"]["all_reduce"];
       },
       "interconnect.intra_node.tree.busbw_efficiency.all_gather", "unknown key"},
      {"ring without all_gather",
       [](json& d) { d["interconnect"]["intra_node"]["ring"]["busbw_efficiency"].erase("all_gather"); },
       "interconnect.intra_node.ring.busbw_efficiency.all_gather", "required field is missing"},
      {"NIC efficiency above 1", [](json& d) { d["interconnect"]["inter_node"]["nic_efficiency"]["value"] = 1.2; },
       "interconnect.inter_node.nic_efficiency.value", "out of range"},
      {"NVLink domain smaller than a node",
       [](json& d) { d["interconnect"]["intra_node"]["domain_gpus"]["value"] = 4; },
       "interconnect.intra_node.domain_gpus.value", "a multiple of node.gpus_per_node (8)"},
      {"NVLink domain of part of a host", [](json& d) { d["interconnect"]["intra_node"]["domain_gpus"]["value"] = 12; },
       "interconnect.intra_node.domain_gpus.value", "joins whole hosts"},
      {"HBM bandwidth typed in TB/s", [](json& d) { d["gpu"]["hbm_bw_GBps"]["value"] = 8; }, "gpu.hbm_bw_GBps.value",
       "below 100 is TB/s"},
      {"interference out of range", [](json& d) { d["interference"]["compute_slowdown_with_comm"]["value"] = 1.0; },
       "interference.compute_slowdown_with_comm.value", "out of range"},
  };
  for (const auto& c : cases) {
    SECTION(c.what) {
      json doc = b300_doc();
      c.mutate(doc);
      try {
        parse(doc);
        FAIL("no error for: " << c.what);
      } catch (const InputError& e) {
        CHECK(e.file() == "profile.json");
        CHECK(e.path() == c.path);
        CHECK_THAT(e.message(), Catch::Contains(c.message));
      }
    }
  }
}

TEST_CASE("A profile without NVLS parses and says so", "[unit]") {
  json doc = b300_doc();
  doc["interconnect"]["intra_node"].erase("nvls");
  const HardwareProfile hw = parse(doc);
  CHECK_FALSE(hw.interconnect.intra_node.nvls.has_value());
}

TEST_CASE("Profile errors inside a scenario carry the hardware prefix", "[unit]") {
  json doc = test::inline_fig8_document("ddp");
  doc["hardware"]["compute"]["gemm_bf16_TFLOPs_by_rows"]["points"][3]["rows"] = 256;
  test::TempDir dir;
  const std::string path = dir.write("scenario.json", doc.dump());
  try {
    load_scenario(path, {});
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(e.path() == "hardware.compute.gemm_bf16_TFLOPs_by_rows.points[3].rows");
  }
}
