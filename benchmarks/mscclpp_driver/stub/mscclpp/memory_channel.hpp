// Stub for MSCCL++'s include/mscclpp/memory_channel.hpp (written for optcoll's outside plan check):
// execution_common.hpp only sizes arrays of DeviceHandle<BaseMemoryChannel>; the real header pulls in
// the CUDA runtime.
#ifndef MSCCLPP_MEMORY_CHANNEL_HPP_
#define MSCCLPP_MEMORY_CHANNEL_HPP_

#include <cstdint>
#include <mscclpp/core.hpp>

namespace mscclpp {
struct BaseMemoryChannel {
  struct DeviceHandle {};
};
}  // namespace mscclpp

#endif  // MSCCLPP_MEMORY_CHANNEL_HPP_
