// Designs side by side on the same model, batch and profile, and the crossovers planners ask
// for: the smallest global batch at which a DDP design beats an FSDP one, and the largest
// routed-expert count that still fits in memory for each design.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "studies/sweep.hpp"

namespace moesim {

struct BatchCrossover {
  std::string ddp_design;
  std::string fsdp_design;
  std::optional<std::int64_t> global_batch_tokens;                         // smallest tried where DDP's MFU >= FSDP's
  std::vector<std::pair<std::int64_t, std::pair<double, double>>> probes;  // batch -> (ddp, fsdp) MFU
  std::string note;
};

struct ExpertWall {
  std::string design;
  std::optional<std::int64_t> largest_fitting_experts;
  std::optional<std::int64_t> first_oom_experts;
  std::string note;
};

struct CompareResult {
  std::vector<std::string> designs;
  SweepSpec spec;      // the side-by-side points' axes: design first, then the swept paths
  SweepResult points;  // every design at every point of the other axes, in axis order
  std::vector<BatchCrossover> crossovers;
  std::vector<ExpertWall> walls;
};

// `designs`: short names (design_spec.hpp). Probes are composed from `source` (its --set values
// included). `axes`: other paths to set the designs side by side over (a scenario's sweep block,
// `compare --vary`); a design axis among them is replaced by `designs`. The crossovers and walls
// are searched from the scenario itself.
CompareResult compare_designs(const ScenarioSource& source, const std::vector<std::string>& designs, int jobs,
                              const SweepSpec& axes = {});

}  // namespace moesim
