// The GPUs this process drives and how they talk: one process driving every visible GPU through
// ncclCommInitAll (like nccl-tests' -g mode), or, when built with MPI and started with several
// ranks, one rank per GPU through ncclCommInitRank. Collectives are enqueued from one host thread
// inside ncclGroupStart/End over the local slots.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "check.hpp"

namespace moesim::cal {

struct Slot {
    int device = 0;
    int rank = 0;                   // rank in the NCCL communicator
    cudaStream_t stream = nullptr;  // main stream: collectives, GEMMs, timing
    cudaStream_t side = nullptr;    // second stream: background work for interference
    ncclComm_t comm = nullptr;
    std::unique_ptr<DeviceCounter> counter;
};

// Owns one device allocation; frees it on destruction (errors ignored while unwinding).
class DeviceBuffer {
  public:
    DeviceBuffer() = default;
    DeviceBuffer(int device, std::uint64_t bytes);
    ~DeviceBuffer();
    DeviceBuffer(DeviceBuffer&& o) noexcept;
    DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    template <typename T>
    T* as() const {
        return static_cast<T*>(ptr_);
    }
    void* get() const { return ptr_; }
    std::uint64_t bytes() const { return bytes_; }

  private:
    void release();
    int device_ = 0;
    void* ptr_ = nullptr;
    std::uint64_t bytes_ = 0;
};

class Context {
  public:
    // Starts MPI (when built with it), picks devices, creates streams and the communicator.
    Context(int* argc, char*** argv);
    ~Context();
    Context(const Context&) = delete;
    Context& operator=(const Context&) = delete;

    std::vector<Slot> slots;  // local GPUs
    int world = 1;            // ranks (GPUs) in the communicator
    int proc_rank = 0, proc_count = 1, node_count = 1;
    bool root() const { return proc_rank == 0; }
    Slot& first() { return slots.front(); }

    // Waits for every local stream, failing on NCCL async errors or after timeout_s.
    void sync(double timeout_s = 300.0);
    void sync_stream(const Slot& s, cudaStream_t st, double timeout_s = 300.0);

    // Cross-process agreement (no-ops without MPI): value from rank 0, elementwise max, sum.
    int bcast_int(int v) const;
    double bcast_double(double v) const;
    void max_over_procs(std::vector<double>& v) const;
    std::uint64_t sum_over_procs(std::uint64_t v) const;
    void barrier() const;

    // Smallest free device memory over all GPUs in the run, in bytes.
    std::int64_t min_free_bytes() const;

    // Clean shutdown of NCCL and MPI; skipped after a failure (comms may be broken).
    void shutdown();
    // After a failure: ends the other MPI ranks (no-op without MPI or with one process).
    void abort_run();

  private:
    bool mpi_ = false;
    bool shut_ = false;
};

// Number of visible CUDA devices; on failure fills `why` and returns 0.
int visible_device_count(std::string& why);

}  // namespace moesim::cal
