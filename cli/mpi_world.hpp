// Sweeps larger than one machine: under `mpirun -np K moesim sweep ...` (OpenMPI, optional at
// build), each rank simulates a contiguous slice of the points and rank 0 gathers them and
// writes the one report, identical to the single-process one.
#pragma once

#include <string>
#include <vector>

namespace moesim::cli {

class MpiWorld {
 public:
  MpiWorld();  // joins MPI only when built with it and launched by an MPI launcher
  ~MpiWorld();
  MpiWorld(const MpiWorld&) = delete;
  MpiWorld& operator=(const MpiWorld&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // Rank 0 receives every rank's text in rank order; other ranks receive nothing.
  std::vector<std::string> gather(const std::string& mine) const;
  // Every rank receives every rank's text in rank order (the plan search's shared decisions).
  std::vector<std::string> all_gather(const std::string& mine) const;

 private:
  int rank_ = 0;
  int size_ = 1;
  bool active_ = false;
};

}  // namespace moesim::cli
