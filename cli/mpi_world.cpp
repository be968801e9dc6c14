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

#if defined(MOESIM_WITH_MPI)
namespace {
// Every rank's text, concatenated in rank order, and where each piece starts.
struct Pieces {
  std::vector<int> lengths, offsets;
  std::string all;
  int total() const { return offsets.empty() ? 0 : offsets.back() + lengths.back(); }
  void place(int size) {
    offsets.assign(static_cast<std::size_t>(size), 0);
    for (std::size_t r = 1; r < offsets.size(); ++r) offsets[r] = offsets[r - 1] + lengths[r - 1];
  }
  std::vector<std::string> split() const {
    std::vector<std::string> out;
    for (std::size_t r = 0; r < lengths.size(); ++r)
      out.push_back(all.substr(static_cast<std::size_t>(offsets[r]), static_cast<std::size_t>(lengths[r])));
    return out;
  }
};
}  // namespace
#endif

std::vector<std::string> MpiWorld::gather(const std::string& mine) const {
  if (!active_) return {mine};
#if defined(MOESIM_WITH_MPI)
  const int length = static_cast<int>(mine.size());
  Pieces p;
  p.lengths.resize(static_cast<std::size_t>(size_));
  MPI_Gather(&length, 1, MPI_INT, p.lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  p.place(size_);
  p.all.assign(rank_ == 0 ? static_cast<std::size_t>(p.total()) : 0, '\0');
  MPI_Gatherv(mine.data(), length, MPI_CHAR, p.all.data(), p.lengths.data(), p.offsets.data(), MPI_CHAR, 0,
              MPI_COMM_WORLD);
  return rank_ == 0 ? p.split() : std::vector<std::string>{};
#else
  return {mine};
#endif
}

std::vector<std::string> MpiWorld::all_gather(const std::string& mine) const {
  if (!active_) return {mine};
#if defined(MOESIM_WITH_MPI)
  const int length = static_cast<int>(mine.size());
  Pieces p;
  p.lengths.resize(static_cast<std::size_t>(size_));
  MPI_Allgather(&length, 1, MPI_INT, p.lengths.data(), 1, MPI_INT, MPI_COMM_WORLD);
  p.place(size_);
  p.all.assign(static_cast<std::size_t>(p.total()), '\0');
  MPI_Allgatherv(mine.data(), length, MPI_CHAR, p.all.data(), p.lengths.data(), p.offsets.data(), MPI_CHAR,
                 MPI_COMM_WORLD);
  return p.split();
#else
  return {mine};
#endif
}

}  // namespace moesim::cli
