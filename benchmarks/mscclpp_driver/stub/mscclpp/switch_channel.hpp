// Stub for MSCCL++'s include/mscclpp/switch_channel.hpp (written for optcoll's outside plan check):
// execution_common.hpp only sizes arrays of DeviceHandle<SwitchChannel>; the real header pulls in
// the CUDA runtime.
#ifndef MSCCLPP_SWITCH_CHANNEL_HPP_
#define MSCCLPP_SWITCH_CHANNEL_HPP_

#include <cstdint>
#include <mscclpp/core.hpp>

namespace mscclpp {
struct SwitchChannel {
  struct DeviceHandle {};
};
}  // namespace mscclpp

#endif  // MSCCLPP_SWITCH_CHANNEL_HPP_
