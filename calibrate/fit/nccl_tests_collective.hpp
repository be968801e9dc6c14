// Which collective one nccl-tests test measured: from --kind, the `# Collective test starting:`
// banner, a `*_perf` name in the log, the file name, and the column layout, which each nccl-tests
// test prints its own way (nccl_tests_import.hpp). Internal to the importer.
#pragma once

#include <set>
#include <string>

#include "calibrate/fit/nccl_tests_import.hpp"

namespace moesim::fit {

// Collectives a text names by nccl-tests binary (all_reduce_perf, alltoall_perf_mpi, ...).
struct NamedCollectives {
  std::set<std::string> kinds;        // measurement kinds moesim imports
  std::set<std::string> unsupported;  // broadcast, reduce, gather, scatter, alltoallv, hypercube
  void add(const std::string& text);
};

// Sets log.kind and log.kind_from (and notes); throws InputError naming the file and the test
// when the sources disagree or leave several collectives possible.
void resolve_collective(NcclTestsLog& log, const NamedCollectives& banners, const NamedCollectives& mentioned,
                        const NcclTestsOptions& opts);

}  // namespace moesim::fit
