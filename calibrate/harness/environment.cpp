// Environment description for the measurements document (see environment.hpp).
#include "environment.hpp"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <unistd.h>

#include <cctype>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>

namespace moesim::cal {
namespace {

std::string version3(int major, int minor, int patch) {
    return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

// The kernel module's version, e.g. "580.159.03", from the driver's proc file.
std::string driver_version() {
    std::ifstream in("/proc/driver/nvidia/version");
    std::string line;
    if (!in || !std::getline(in, line)) return "unknown";
    std::istringstream ss(line);
    std::string word;
    while (ss >> word)
        if (!word.empty() && std::isdigit(static_cast<unsigned char>(word[0])) && word.find('.') != std::string::npos)
            return word;
    return "unknown";
}

std::string utc_now() {
    std::time_t t = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

json::Value device_info(int dev) {
    json::Value d = json::Value::object();
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, dev) != cudaSuccess) {
        cudaGetLastError();
        d.set("index", dev);
        d.set("error", "cudaGetDeviceProperties failed");
        return d;
    }
    auto attr = [dev](cudaDeviceAttr a) {
        int v = 0;
        if (cudaDeviceGetAttribute(&v, a, dev) != cudaSuccess) {
            cudaGetLastError();
            v = 0;
        }
        return v;
    };
    char bus[32] = {0};
    if (cudaDeviceGetPCIBusId(bus, sizeof bus, dev) != cudaSuccess) cudaGetLastError();
    d.set("index", dev);
    d.set("name", std::string(p.name));
    d.set("pci_bus_id", std::string(bus));
    d.set("compute_capability", std::to_string(p.major) + "." + std::to_string(p.minor));
    d.set("sm_count", p.multiProcessorCount);
    d.set("sm_clock_mhz", attr(cudaDevAttrClockRate) / 1000);  // peak, kHz -> MHz
    d.set("memory_clock_mhz", attr(cudaDevAttrMemoryClockRate) / 1000);
    d.set("memory_bus_width_bits", p.memoryBusWidth);
    d.set("memory_bytes", static_cast<std::int64_t>(p.totalGlobalMem));
    d.set("l2_bytes", p.l2CacheSize);
    return d;
}

}  // namespace

json::Value tool_info(const std::vector<std::string>& argv) {
    json::Value t = json::Value::object();
    t.set("name", "moesim-calibrate");
    t.set("version", "1.0.0");
#ifdef MOESIM_BUILD_KIND
    t.set("build", MOESIM_BUILD_KIND);
#else
    t.set("build", "unknown");
#endif
#ifdef MOESIM_WITH_MPI
    t.set("with_mpi", true);
#else
    t.set("with_mpi", false);
#endif
    t.set("command_line", json::Value::array_of(argv));
    return t;
}

json::Value collect_environment(const Context* ctx) {
    json::Value e = json::Value::object();
    char host[256] = {0};
    if (gethostname(host, sizeof host - 1) != 0) host[0] = 0;
    e.set("hostname", std::string(host));
    e.set("date_utc", utc_now());
    e.set("driver_version", driver_version());
    int drv = 0, rt = 0;
    if (cudaDriverGetVersion(&drv) != cudaSuccess) cudaGetLastError();
    if (cudaRuntimeGetVersion(&rt) != cudaSuccess) cudaGetLastError();
    e.set("cuda_driver_api_version", version3(drv / 1000, (drv % 1000) / 10, 0));
    e.set("cuda_runtime_version", version3(rt / 1000, (rt % 1000) / 10, 0));
    int maj = 0, min = 0, pat = 0;
    cublasGetProperty(MAJOR_VERSION, &maj);
    cublasGetProperty(MINOR_VERSION, &min);
    cublasGetProperty(PATCH_LEVEL, &pat);
    e.set("cublas_version", version3(maj, min, pat));
    e.set("cublaslt_version", static_cast<std::int64_t>(cublasLtGetVersion()));
    int nccl = 0;
    ncclGetVersion(&nccl);
    // NCCL >= 2.9 encodes major*10000 + minor*100 + patch.
    e.set("nccl_version", version3(nccl / 10000, (nccl % 10000) / 100, nccl % 100));
    e.set("nccl_header_version", version3(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH));
    e.set("cublas_header_version", version3(CUBLAS_VER_MAJOR, CUBLAS_VER_MINOR, CUBLAS_VER_PATCH));

    json::Value devs = json::Value::array();
    int visible = 0;
    if (cudaGetDeviceCount(&visible) != cudaSuccess) {
        cudaGetLastError();
        visible = 0;
    }
    if (ctx) {
        for (const auto& s : ctx->slots) devs.push_back(device_info(s.device));
    } else {
        for (int i = 0; i < visible; ++i) devs.push_back(device_info(i));
    }
    e.set("gpus_visible", visible);
    e.set("gpu_count", ctx ? ctx->world : 0);
    e.set("node_count", ctx ? ctx->node_count : (visible ? 1 : 0));
    e.set("process_count", ctx ? ctx->proc_count : 1);
    e.set("device", devs.size() ? devs.as_array().front() : json::Value());
    e.set("devices", devs);
    return e;
}

}  // namespace moesim::cal
