#include "cli/mpi_world.hpp"

#include <cstdlib>

#if defined(MOESIM_WITH_MPI)
#include <mpi.h>
#endif

namespace moesim::cli {

#if defined(MOESIM_WITH_MPI)
namespace {
// Set by OpenMPI's and MPICH/PMI launchers; without one, the sweep stays a single process.
bool launched_by_mpi() { return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMI_SIZE") != nullptr; }
}  // namespace
#endif

MpiWorld::MpiWorld() {
#if defined(MOESIM_WITH_MPI)
  if (!launched_by_mpi()) return;
  MPI_Init(nullptr, nullptr);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  active_ = true;
#endif
}

MpiWorld::~MpiWorld() {
#if defined(MOESIM_WITH_MPI)
  if (active_) MPI_Finalize();
#endif
}

std::vector<std::string> MpiWorld::gather(const std::string& mine) const {
  if (!active_) return {mine};
#if defined(MOESIM_WITH_MPI)
  const int length = static_cast<int>(mine.size());
  std::vector<int> lengths(static_cast<std::size_t>(size_)), offsets(static_cast<std::size_t>(size_));
  MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  int total = 0;
  for (int r = 0; r < size_; ++r) {
    offsets[static_cast<std::size_t>(r)] = total;
    total += lengths[static_cast<std::size_t>(r)];
  }
  std::string all(rank_ == 0 ? static_cast<std::size_t>(total) : 0, '\0');
  MPI_Gatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
  std::vector<std::string> out;
  if (rank_ == 0) {
    for (int r = 0; r < size_; ++r)
      out.push_back(all.substr(static_cast<std::size_t>(offsets[static_cast<std::size_t>(r)]),
                               static_cast<std::size_t>(lengths[static_cast<std::size_t>(r)])));
  }
  return out;
#else
  return {mine};
#endif
}

std::vector<std::string> MpiWorld::all_gather(const std::string& mine) const {
  if (!active_) return {mine};
#if defined(MOESIM_WITH_MPI)
  const int length = static_cast<int>(mine.size());
  std::vector<int> lengths(static_cast<std::size_t>(size_)), offsets(static_cast<std::size_t>(size_));
  MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, MPI_COMM_WORLD);
  int total = 0;
  for (int r = 0; r < size_; ++r) {
    offsets[static_cast<std::size_t>(r)] = total;
    total += lengths[static_cast<std::size_t>(r)];
  }
  std::string all(static_cast<std::size_t>(total), '\0');
  MPI_Allgatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, MPI_COMM_WORLD);
  std::vector<std::string> out;
  for (int r = 0; r < size_; ++r)
    out.push_back(all.substr(static_cast<std::size_t>(offsets[static_cast<std::size_t>(r)]),
                             static_cast<std::size_t>(lengths[static_cast<std::size_t>(r)])));
  return out;
#else
  return {mine};
#endif
}

}  // namespace moesim::cli
