// Stub for MSCCL++'s include/mscclpp/gpu_data_types.hpp (written for optcoll's outside plan
// check): the real one includes cuda_fp16.h etc.; the executor's public header only needs
// the DataType enum's name.
#ifndef MSCCLPP_GPU_DATA_TYPES_HPP_
#define MSCCLPP_GPU_DATA_TYPES_HPP_

#include <cstdint>

namespace mscclpp {
enum class DataType { INT32, UINT32, FLOAT16, FLOAT32, BFLOAT16 };
}  // namespace mscclpp

#endif  // MSCCLPP_GPU_DATA_TYPES_HPP_
