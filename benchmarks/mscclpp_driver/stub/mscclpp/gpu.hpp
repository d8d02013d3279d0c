// Stub for MSCCL++'s include/mscclpp/gpu.hpp (written for optcoll's outside plan check):
// plan loading needs no GPU. This gives the executor's public header its cudaStream_t and
// src/core/errors.cc the names of the CUDA error calls it formats (never called here).
#ifndef MSCCLPP_GPU_HPP_
#define MSCCLPP_GPU_HPP_

#include <mscclpp/device.hpp>

using cudaStream_t = void*;
using cudaError_t = int;
using CUresult = int;
#define CUDA_SUCCESS 0
inline const char* cudaGetErrorString(cudaError_t) { return "CUDA stub"; }
inline CUresult cuGetErrorString(CUresult, const char** text) {
  *text = "CUDA stub";
  return CUDA_SUCCESS;
}

#endif  // MSCCLPP_GPU_HPP_
