// Error handling for the harness: every CUDA, NCCL and cuBLAS call goes through a check macro
// that throws HarnessError with the call text, the library's error string and the name of the
// measurement that was running, so that main() can report it and still write the results taken.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <stdexcept>
#include <string>

namespace moesim::cal {

class HarnessError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// The measurement currently being taken ("" outside any), for error messages.
const std::string& current_measurement();

// Sets the current measurement name for its lifetime; restores the previous one after.
class MeasurementScope {
  public:
    explicit MeasurementScope(std::string name);
    ~MeasurementScope();
    MeasurementScope(const MeasurementScope&) = delete;
    MeasurementScope& operator=(const MeasurementScope&) = delete;

  private:
    std::string previous_;
};

// Testing the failure path without a broken GPU: the first `library` ("cuda", "nccl" or
// "cublas") call checked inside a measurement whose name contains `measurement` reports the
// error that library returns for a failed kernel (cudaErrorLaunchFailure,
// ncclUnhandledCudaError, CUBLAS_STATUS_EXECUTION_FAILED). One shot.
void inject_failure(const std::string& library, const std::string& measurement);

namespace detail {
[[noreturn]] void call_failed(const char* call, const std::string& what, const char* file, int line);
void check(cudaError_t rc, const char* call, const char* file, int line);
void check(ncclResult_t rc, const char* call, const char* file, int line);
void check(cublasStatus_t rc, const char* call, const char* file, int line);
}  // namespace detail

const char* cublas_status_name(cublasStatus_t rc);

}  // namespace moesim::cal

#define CAL_CUDA(call) ::moesim::cal::detail::check((call), #call, __FILE__, __LINE__)
#define CAL_NCCL(call) ::moesim::cal::detail::check((call), #call, __FILE__, __LINE__)
#define CAL_CUBLAS(call) ::moesim::cal::detail::check((call), #call, __FILE__, __LINE__)
// After a kernel launch: catches launch-configuration errors at the launch site.
#define CAL_CHECK_LAUNCH() CAL_CUDA(cudaGetLastError())
