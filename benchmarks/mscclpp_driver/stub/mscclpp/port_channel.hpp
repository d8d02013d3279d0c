// Stub for MSCCL++'s include/mscclpp/port_channel.hpp (written for optcoll's outside plan check):
// execution_common.hpp only sizes arrays of DeviceHandle<BasePortChannel>; the real header pulls in
// the CUDA runtime.
#ifndef MSCCLPP_PORT_CHANNEL_HPP_
#define MSCCLPP_PORT_CHANNEL_HPP_

#include <cstdint>
#include <mscclpp/core.hpp>

namespace mscclpp {
using MemoryId = uint32_t;  // as in port_channel_device.hpp
struct BasePortChannel {
  struct DeviceHandle {};
};
}  // namespace mscclpp

#endif  // MSCCLPP_PORT_CHANNEL_HPP_
