// Every parameter tensor of an architecture, in module (forward) order.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "models/arch/architecture.hpp"
#include "models/common/enum_names.hpp"

namespace moesim {

// `norm` holds every small non-matmul tensor of a block: norm weights and biases, linear biases,
// attention sinks, a Mamba-2 mixer's conv filter, decay, skip and dt bias. `mamba` is a Mamba-2
// mixer's in and out projections.
enum class TensorClass { embedding, attention, norm, dense_mlp, router, shared_expert, routed_expert, lm_head, mamba };

inline constexpr EnumNames<TensorClass, 9> kTensorClassNames{"tensor class",
                                                             {{{TensorClass::embedding, "embedding"},
                                                               {TensorClass::attention, "attention"},
                                                               {TensorClass::norm, "norm"},
                                                               {TensorClass::dense_mlp, "dense_mlp"},
                                                               {TensorClass::router, "router"},
                                                               {TensorClass::shared_expert, "shared_expert"},
                                                               {TensorClass::routed_expert, "routed_expert"},
                                                               {TensorClass::lm_head, "lm_head"},
                                                               {TensorClass::mamba, "mamba"}}}};
constexpr std::string_view name_of(TensorClass value) { return kTensorClassNames.name(value); }

struct TensorInfo {
  std::string name;
  std::vector<std::int64_t> shape;  // routed experts are stacked: [N, ...]
  std::int64_t numel = 0;
  TensorClass cls = TensorClass::attention;
  // -1: before the blocks (embedding), num_layers: after (final norm, head, MTP modules)
  std::int64_t layer = -1;
  bool is_matmul() const;  // weight of a GEMM (counts towards 6N-style FLOPs)
};

struct Inventory {
  std::vector<TensorInfo> tensors;
  double params_total = 0;
  double params_active = 0;  // routed experts count K/N of their parameters (Olmo-core report)
};

Inventory build_inventory(const Architecture& arch);

}  // namespace moesim
