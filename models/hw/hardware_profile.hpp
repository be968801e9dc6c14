// A node type: GPU peaks and sustained rates, memory capacity and reserves, interconnect. Every
// number carries its provenance (datasheet, published measurement, fitted, or assumption).
#pragma once

#include <string>
#include <vector>

namespace moesim {

class JsonReader;

enum class SourceKind { datasheet, published, fitted, assumption };

struct Quantity {
  double value = 0;
  SourceKind kind = SourceKind::assumption;
  std::string source;  // document / file and where in it; for assumptions, the reasoning
};

std::string_view name_of(SourceKind k);

struct GpuSpec {
  std::string model;
  Quantity peak_bf16_TFLOPs;  // nominal dense peak: MFU's denominator
  Quantity hbm_bw_GBps;       // nominal
};

struct MemorySpec {
  Quantity usable_capacity_GiB;    // what the allocator can get on an idle GPU
  Quantity cuda_context_GiB;       // CUDA context + kernel images, outside the allocator
  Quantity nccl_buffers_GiB;       // NCCL channel buffers per communicator set
  Quantity library_workspace_GiB;  // cuBLAS/cuBLASLt workspaces
  Quantity fragmentation_fraction; // share of reserved memory lost to allocator fragmentation
};

struct NodeSpec {
  Quantity gpus_per_node;
  Quantity nvlink_bw_GBps_per_direction;
  Quantity nic_bw_Gbps_per_gpu;
};

struct HardwareProfile {
  std::string name;
  std::string description;
  GpuSpec gpu;
  MemorySpec memory;
  NodeSpec node;
};

HardwareProfile parse_hardware_profile(const JsonReader& in);

}  // namespace moesim
