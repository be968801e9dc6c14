// Command-line options of moesim-calibrate.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace moesim::cal {

// Measurement groups in the order they run.
const std::vector<std::string>& all_group_names();

struct Options {
    std::string shapes_file;                   // --shapes FILE; empty: built-in fig8-n48 shapes
    std::vector<std::string> groups;           // --only LIST; default all groups
    double budget_s = 0.0;                     // --budget-s; 0 = no limit
    int iters = 50;                            // --iters: timed iterations per point (upper bound)
    int warmup = 5;                            // --warmup: untimed iterations before timing
    int min_iters = 5;                         // fewest timed iterations a budget may trim a point to
    std::string output = "measurements.json";  // -o FILE
    bool quick = false;                        // --quick: small sweeps for smoke runs
    std::uint64_t seed = 20240611;             // --seed: base seed of all random data and routing
    std::int64_t max_bytes = 0;                // --max-bytes: cap on any one buffer (0 = from free memory)
    std::string sequence_grouped = "batched";  // --sequence-grouped: batched | per_expert
    std::string write_default_shapes;          // --write-default-shapes FILE: write built-ins and exit
    std::string inject_library;                // --inject-failure LIB:NAME, for testing: cuda|nccl|cublas
    std::string inject_measurement;            //   and NAME ("" = no injection)
    std::vector<std::string> argv;             // the command line, recorded in the output
    bool help = false;
};

// Parses argv; throws HarnessError with a usage hint on bad input.
Options parse_options(int argc, char** argv);

std::string usage_text();

}  // namespace moesim::cal
