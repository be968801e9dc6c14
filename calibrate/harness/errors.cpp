// Check helpers behind CAL_CUDA / CAL_NCCL / CAL_CUBLAS (see errors.hpp).
#include "errors.hpp"

#include <cstring>
#include <utility>

namespace moesim::cal {
namespace {
std::string& measurement_slot() {
    static std::string name;
    return name;
}
struct Injection {
    std::string library, measurement;
    bool armed = false;
};
Injection& injection() {
    static Injection i;
    return i;
}

// True once: for the armed library, inside a matching measurement.
bool take_injection(const char* library) {
    Injection& i = injection();
    if (!i.armed || i.library != library) return false;
    if (current_measurement().find(i.measurement) == std::string::npos) return false;
    i.armed = false;
    return true;
}

constexpr const char* kInjected = " (injected by --inject-failure)";
}  // namespace

void inject_failure(const std::string& library, const std::string& measurement) {
    injection() = {library, measurement, true};
}

const std::string& current_measurement() { return measurement_slot(); }

MeasurementScope::MeasurementScope(std::string name) : previous_(std::move(name)) {
    std::swap(previous_, measurement_slot());
}

MeasurementScope::~MeasurementScope() { std::swap(previous_, measurement_slot()); }

const char* cublas_status_name(cublasStatus_t rc) {
    switch (rc) {
        case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
        case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
        case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
        case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
        case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
        case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
        case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
        case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
        case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
        case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
        default: return "unknown cuBLAS status";
    }
}

namespace detail {

void call_failed(const char* call, const std::string& what, const char* file, int line) {
    const char* base = std::strrchr(file, '/');
    std::string msg =
        std::string(call) + " failed: " + what + " (" + (base ? base + 1 : file) + ":" + std::to_string(line) + ")";
    const std::string& m = current_measurement();
    // Appended piece by piece: gcc 12 warns (-Wrestrict, a false positive) on literal + string.
    if (m.empty()) {
        msg += " [outside any measurement]";
    } else {
        msg += " [measurement: ";
        msg += m;
        msg += "]";
    }
    throw HarnessError(msg);
}

void check(cudaError_t rc, const char* call, const char* file, int line) {
    const bool injected = take_injection("cuda");
    if (injected) rc = cudaErrorLaunchFailure;
    if (rc == cudaSuccess) return;
    call_failed(call, std::string(cudaGetErrorName(rc)) + ": " + cudaGetErrorString(rc) + (injected ? kInjected : ""),
                file, line);
}

void check(ncclResult_t rc, const char* call, const char* file, int line) {
    const bool injected = take_injection("nccl");
    if (injected) rc = ncclUnhandledCudaError;
    if (rc == ncclSuccess || rc == ncclInProgress) return;
    std::string what = ncclGetErrorString(rc);
    const char* last = injected ? nullptr : ncclGetLastError(nullptr);
    if (last && *last) what += std::string(" (") + last + ")";
    call_failed(call, what + (injected ? kInjected : ""), file, line);
}

void check(cublasStatus_t rc, const char* call, const char* file, int line) {
    const bool injected = take_injection("cublas");
    if (injected) rc = CUBLAS_STATUS_EXECUTION_FAILED;
    if (rc == CUBLAS_STATUS_SUCCESS) return;
    call_failed(call, std::string(cublas_status_name(rc)) + (injected ? kInjected : ""), file, line);
}

}  // namespace detail
}  // namespace moesim::cal
