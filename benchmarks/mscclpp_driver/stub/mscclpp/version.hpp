// Stub for the version.hpp MSCCL++'s CMake generates from include/mscclpp/version.hpp.in.
#ifndef MSCCLPP_VERSION_HPP_
#define MSCCLPP_VERSION_HPP_
#define MSCCLPP_MAJOR 0
#define MSCCLPP_MINOR 0
#define MSCCLPP_PATCH 0
#define MSCCLPP_VERSION 0
#define MSCCLPP_GIT_COMMIT "outside-check"
#endif  // MSCCLPP_VERSION_HPP_
