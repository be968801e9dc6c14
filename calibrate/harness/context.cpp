// Devices, streams and NCCL communicators (see context.hpp).
#include "context.hpp"

#include <chrono>
#include <exception>
#include <thread>

#include "errors.hpp"

#ifdef MOESIM_WITH_MPI
#include <mpi.h>
#endif

namespace moesim::cal {

DeviceBuffer::DeviceBuffer(int device, std::uint64_t bytes) : device_(device), bytes_(bytes) {
    CAL_CUDA(cudaSetDevice(device));
    CAL_CUDA(cudaMalloc(&ptr_, bytes ? bytes : 1));
}

DeviceBuffer::~DeviceBuffer() { release(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept : device_(o.device_), ptr_(o.ptr_), bytes_(o.bytes_) {
    o.ptr_ = nullptr;
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
        release();
        device_ = o.device_;
        ptr_ = o.ptr_;
        bytes_ = o.bytes_;
        o.ptr_ = nullptr;
    }
    return *this;
}

void DeviceBuffer::release() {
    // While unwinding after a failure, leak: cudaFree synchronises the device, which would hang
    // behind a stuck NCCL kernel and keep the results from being written.
    if (ptr_ && std::uncaught_exceptions() == 0) {
        cudaSetDevice(device_);
        cudaFree(ptr_);
        ptr_ = nullptr;
    }
}

int visible_device_count(std::string& why) {
    int n = 0;
    cudaError_t rc = cudaGetDeviceCount(&n);
    if (rc != cudaSuccess) {
        why = std::string("cudaGetDeviceCount: ") + cudaGetErrorName(rc) + ": " + cudaGetErrorString(rc);
        cudaGetLastError();
        return 0;
    }
    if (n == 0) why = "cudaGetDeviceCount reported 0 devices";
    return n;
}

Context::Context(int* argc, char*** argv) {
    std::string why;
    const int ndev = visible_device_count(why);
    if (ndev == 0) throw HarnessError("no CUDA device: " + why);
#ifdef MOESIM_WITH_MPI
    MPI_Init(argc, argv);
    mpi_ = true;
    MPI_Comm_rank(MPI_COMM_WORLD, &proc_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &proc_count);
    MPI_Comm local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, proc_rank, MPI_INFO_NULL, &local);
    int local_rank = 0;
    MPI_Comm_rank(local, &local_rank);
    MPI_Comm_free(&local);
    int is_leader = local_rank == 0 ? 1 : 0;
    MPI_Allreduce(&is_leader, &node_count, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
#else
    (void)argc;
    (void)argv;
    int local_rank = 0;
#endif
    if (proc_count > 1) {  // one rank per GPU
        slots.resize(1);
        slots[0].device = local_rank % ndev;
        slots[0].rank = proc_rank;
        world = proc_count;
    } else {  // this process drives every visible GPU
        slots.resize(static_cast<std::size_t>(ndev));
        for (int i = 0; i < ndev; ++i)
            slots[static_cast<std::size_t>(i)].device = slots[static_cast<std::size_t>(i)].rank = i;
        world = ndev;
    }
    for (auto& s : slots) {
        MeasurementScope scope("setup: device " + std::to_string(s.device));
        CAL_CUDA(cudaSetDevice(s.device));
        CAL_CUDA(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking));
        CAL_CUDA(cudaStreamCreateWithFlags(&s.side, cudaStreamNonBlocking));
        s.counter = std::make_unique<DeviceCounter>(s.device);
    }
    MeasurementScope scope("setup: NCCL communicator");
    if (proc_count > 1) {
#ifdef MOESIM_WITH_MPI
        ncclUniqueId id;
        if (proc_rank == 0) CAL_NCCL(ncclGetUniqueId(&id));
        MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
        CAL_CUDA(cudaSetDevice(slots[0].device));
        CAL_NCCL(ncclCommInitRank(&slots[0].comm, world, id, proc_rank));
#endif
    } else {
        std::vector<ncclComm_t> comms(slots.size());
        std::vector<int> devs;
        for (const auto& s : slots) devs.push_back(s.device);
        CAL_NCCL(ncclCommInitAll(comms.data(), static_cast<int>(devs.size()), devs.data()));
        for (std::size_t i = 0; i < slots.size(); ++i) slots[i].comm = comms[i];
    }
}

Context::~Context() = default;

void Context::abort_run() {
#ifdef MOESIM_WITH_MPI
    if (mpi_ && !shut_ && proc_count > 1) MPI_Abort(MPI_COMM_WORLD, 1);  // peers may be blocked
#endif
}

void Context::shutdown() {
    for (auto& s : slots) {
        cudaSetDevice(s.device);
        if (s.comm) ncclCommDestroy(s.comm);
        s.comm = nullptr;
        s.counter.reset();
        cudaStreamDestroy(s.stream);
        cudaStreamDestroy(s.side);
    }
#ifdef MOESIM_WITH_MPI
    if (mpi_) MPI_Finalize();
#endif
    shut_ = true;
}

void Context::sync_stream(const Slot& s, cudaStream_t st, double timeout_s) {
    const auto start = std::chrono::steady_clock::now();
    for (int spins = 0;; ++spins) {
        const cudaError_t q = cudaStreamQuery(st);
        if (q == cudaSuccess) return;
        if (q != cudaErrorNotReady) CAL_CUDA(q);
        if (s.comm) {
            ncclResult_t async = ncclSuccess;
            CAL_NCCL(ncclCommGetAsyncError(s.comm, &async));
            if (async != ncclSuccess && async != ncclInProgress) CAL_NCCL(async);  // throws with the NCCL error string
        }
        const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (waited > timeout_s)
            throw HarnessError("device " + std::to_string(s.device) + " did not finish within " +
                               std::to_string(static_cast<int>(timeout_s)) +
                               " s [measurement: " + current_measurement() + "]");
        if (spins > 1000) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
}

void Context::sync(double timeout_s) {
    for (const auto& s : slots) {
        sync_stream(s, s.stream, timeout_s);
        sync_stream(s, s.side, timeout_s);
    }
}

int Context::bcast_int(int v) const {
#ifdef MOESIM_WITH_MPI
    if (proc_count > 1) MPI_Bcast(&v, 1, MPI_INT, 0, MPI_COMM_WORLD);
#endif
    return v;
}

double Context::bcast_double(double v) const {
#ifdef MOESIM_WITH_MPI
    if (proc_count > 1) MPI_Bcast(&v, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
#endif
    return v;
}

void Context::max_over_procs(std::vector<double>& v) const {
#ifdef MOESIM_WITH_MPI
    if (proc_count > 1 && !v.empty())
        MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
#else
    (void)v;
#endif
}

std::uint64_t Context::sum_over_procs(std::uint64_t v) const {
#ifdef MOESIM_WITH_MPI
    if (proc_count > 1) {
        unsigned long long x = v;
        MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
        v = x;
    }
#endif
    return v;
}

void Context::barrier() const {
#ifdef MOESIM_WITH_MPI
    if (proc_count > 1) MPI_Barrier(MPI_COMM_WORLD);
#endif
}

std::int64_t Context::min_free_bytes() const {
    double least = 0;
    bool first = true;
    for (const auto& s : slots) {
        std::size_t free_b = 0, total_b = 0;
        CAL_CUDA(cudaSetDevice(s.device));
        CAL_CUDA(cudaMemGetInfo(&free_b, &total_b));
        if (first || static_cast<double>(free_b) < least) least = static_cast<double>(free_b);
        first = false;
    }
    std::vector<double> v{-least};
    max_over_procs(v);  // max of negatives = min
    return static_cast<std::int64_t>(-v[0]);
}

}  // namespace moesim::cal
