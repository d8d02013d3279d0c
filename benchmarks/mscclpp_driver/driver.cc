// Outside check of MSCCL++ execution plans, written for optcoll (benchmarks/mscclpp_parser.py).
//
// It loads a plan through MSCCL++'s own, unmodified plan loader (src/core/executor/
// execution_plan.cc, compiled beside this file with src/core/errors.cc) exactly as the
// executor does for a new execution context (executor.cc, Executor::Impl::
// setupExecutionContext): ExecutionPlan(path, rank), then reset() and
// loadExecutionPlan(inputSize, outputSize, 0, 0) for every rank. Then it repeats the host-side
// bookkeeping of executor.cc that needs no GPU: the scratch size (setupScratchBuffer), the
// channel and registered-memory lists (setupConnections, setupChannels,
// setupRegisteredMemories) and the device plan (setupDeviceExecutionPlan, with its
// MAX_OPERATION check). MSCCL++'s code is not copied here; the steps are re-stated.
//
// Verdicts, one line per job on stdout:
//   OK                       every rank loaded and passed the checks below
//   REJECT rank R: MESSAGE   MSCCL++'s code threw (its message), or a step of executor.cc
//                            restated here threw the same error it would
//   CRASH rank R: DETAIL     MSCCL++'s code hit an assertion or undefined behaviour (the
//                            build uses _GLIBCXX_ASSERTIONS and -fsanitize=undefined), e.g. a
//                            vector index out of range or an array of execution_common.hpp
//                            overrun; the sanitizer's message follows
//   BOUNDS rank R: MESSAGE   loaded, but the device plan would index past what the executor
//                            set up, or an op would touch bytes past its buffer: rules derived
//                            (not copied) from executor.cc and execution_kernel.hpp, see
//                            deviceChecks() and regionChecks()
//
// Jobs come on stdin, one a line: PLAN_PATH INPUT_BYTES OUTPUT_BYTES. Each job runs in a
// forked child so that an abort in their code ends only that job.

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "execution_plan.hpp"

namespace {

struct Bounds : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A byte range an op of `rank` touches in the buffer of `owner` (-1: checked already).
struct Region {
  int owner;
  mscclpp::BufferType type;
  size_t end;
  std::string where;
};

bool isPacketOp(mscclpp::OperationType t) {
  using T = mscclpp::OperationType;
  return t == T::PUT_PACKETS || t == T::READ_PUT_PACKETS || t == T::COPY_PACKETS || t == T::UNPACK_PACKETS ||
         t == T::REDUCE_PACKETS || t == T::REDUCE_COPY_PACKETS || t == T::REDUCE_SEND_PACKETS ||
         t == T::REDUCE_COPY_SEND_PACKETS;
}

bool movesData(mscclpp::OperationType t) {
  using T = mscclpp::OperationType;
  return t == T::PUT || t == T::PUT_WITH_SIGNAL || t == T::PUT_WITH_SIGNAL_AND_FLUSH || t == T::GET ||
         t == T::COPY || t == T::REDUCE || t == T::REDUCE_SEND || t == T::READ_REDUCE || t == T::READ_REDUCE_SEND ||
         t == T::MULTI_LOAD_REDUCE_STORE || t == T::MULTI_STORE || isPacketOp(t);
}

const char* bufferName(mscclpp::BufferType t) {
  switch (t) {
    case mscclpp::BufferType::INPUT:
      return "input";
    case mscclpp::BufferType::OUTPUT:
      return "output";
    case mscclpp::BufferType::SCRATCH:
      return "scratch";
    default:
      return "none";
  }
}

// The job runner lives in mscclpp::Executor::Impl (the one place ExecutionPlan lets read its
// internals); main reaches it through this pointer, set when the program starts.
int (*runJob)(const std::string& path, size_t inputSize, size_t outputSize, FILE* out) = nullptr;

}  // namespace

namespace mscclpp {

// ExecutionPlan makes `class Executor` its friend; the executor's own Impl is the place that
// reads plan.impl_, so the driver's checks live in an Executor::Impl of its own (executor.cc,
// which defines the real one, is not compiled here).
struct Executor::Impl {
  struct Rank {
    size_t scratchSize = 0;
    std::vector<Region> remote;
  };

  // Registered remote buffers in the order executor.cc's setupRegisteredMemories appends them:
  // registeredMemoryAddresses (memory channels) and registeredMemoryIds (port channels).
  struct Owner {
    int rank;
    BufferType type;
  };

  static Rank checkRank(const std::string& path, const nlohmann::json& gpus, int rank, int nranks, size_t inputSize,
                        size_t outputSize) {
    ExecutionPlan plan(path, rank);
    ExecutionPlan::Impl& p = *plan.impl_;
    p.reset();
    p.loadExecutionPlan(inputSize, outputSize, 0, 0);

    Rank result;
    // setupScratchBuffer
    result.scratchSize =
        p.calScratchBufferSize(std::min(inputSize, p.maxMessageSize), std::min(outputSize, p.maxMessageSize));
    p.calMaxScratchChunkSize(result.scratchSize);
    const size_t defaultScratchBufferSize = (1 << 27);
    if (p.reuseResources && result.scratchSize > defaultScratchBufferSize) {
      throw Error("Scratch buffer size (" + std::to_string(result.scratchSize) +
                      " bytes) exceeds default buffer size (" + std::to_string(defaultScratchBufferSize) +
                      " bytes). Consider increasing the default scratch buffer size or disabling resource reuse.",
                  ErrorCode::ExecutorError);
    }
    // Operation keeps offsets and sizes as uint32_t (execution_common.hpp), and the parser
    // computes them in uint32_t (getBufferSize, getOffset's chunkSize): a buffer must stay
    // below 4 GiB
    for (size_t bytes : {inputSize, outputSize, result.scratchSize})
      if (bytes > UINT32_MAX)
        throw Bounds("a buffer of " + std::to_string(bytes) +
                     " bytes: Operation's offsets and sizes are uint32_t, so bytes past 4 GiB are misaddressed");
    // setupConnections / setupChannels: one channel per connected peer of each channel entry
    size_t nMemoryChannels = 0, nPortChannels = 0;
    for (const auto& info : p.getChannelInfos(ChannelType::MEMORY)) nMemoryChannels += info.connectedPeers.size();
    for (const auto& info : p.getChannelInfos(ChannelType::PORT)) nPortChannels += info.connectedPeers.size();
    p.getUnpairedChannelInfos(nranks, ChannelType::MEMORY);
    p.getUnpairedChannelInfos(nranks, ChannelType::PORT);
    p.nvlsInfos.at(rank);
    // setupRegisteredMemories
    std::vector<Owner> memoryOwners, portOwners;
    for (const auto& info : p.getRemoteBufferInfos()) {
      for (ChannelType type : info.accessChannelTypes) {
        if (type == ChannelType::MEMORY) memoryOwners.push_back({info.rank, info.bufferType});
        if (type == ChannelType::PORT) portOwners.push_back({info.rank, info.bufferType});
      }
    }
    deviceChecks(p, nMemoryChannels, nPortChannels, memoryOwners.size(), portOwners.size());
    regionChecks(p, gpus[rank], rank, inputSize, outputSize, result, memoryOwners, portOwners);
    return result;
  }

  // setupDeviceExecutionPlan, and what the kernel indexes with each op's fields.
  static void deviceChecks(const ExecutionPlan::Impl& p, size_t nMemoryChannels, size_t nPortChannels,
                           size_t nMemoryBuffers, size_t nPortBuffers) {
    for (int tb = 0; tb < p.getThreadblockCount(); tb++) {
      std::vector<Operation> ops = p.getOperations(tb);
      if (ops.size() > MAX_OPERATION) {  // the executor's own check
        throw Error("Executor plan launching " + std::to_string(ops.size()) +
                        " operations, exceeding device execution plan support (" + std::to_string(MAX_OPERATION) +
                        ")",
                    ErrorCode::ExecutorError);
      }
      std::string at = "thread block " + std::to_string(tb) + ": ";
      const auto& memory = p.threadblockMemoryChannels.at(tb);
      const auto& port = p.threadblockPortChannels.at(tb);
      const auto& memoryBuffers = p.threadblockMemoryChannelBuffers.at(tb);
      const auto& portBuffers = p.threadblockPortChannelBuffers.at(tb);
      // DeviceExecutionPlan's channels and remoteBuffers arrays hold MAX_CHANNEL entries
      if (memory.size() > MAX_CHANNEL || port.size() > MAX_CHANNEL || p.threadblockNvlsChannels.at(tb).size() > MAX_CHANNEL)
        throw Bounds(at + "more than MAX_CHANNEL channels of one type");
      if (memoryBuffers.size() > MAX_CHANNEL || portBuffers.size() > MAX_CHANNEL)
        throw Bounds(at + "more than MAX_CHANNEL remote buffers of one channel type");
      // setupDeviceExecutionPlan: context.nvlsChannels holds one switch channel per NvlsInfo
      for (int index : p.threadblockNvlsChannels.at(tb))
        if (index < 0 || size_t(index) >= p.nvlsInfos.at(p.rank).size())
          throw Bounds(at + "switch channel id " + std::to_string(index) + " but the rank has " +
                       std::to_string(p.nvlsInfos.at(p.rank).size()));
      for (int index : memory)
        if (index < 0 || size_t(index) >= nMemoryChannels)
          throw Bounds(at + "memory channel id " + std::to_string(index) + " but the rank has " +
                       std::to_string(nMemoryChannels));
      for (int index : port)
        if (index < 0 || size_t(index) >= nPortChannels)
          throw Bounds(at + "port channel id " + std::to_string(index) + " but the rank has " +
                       std::to_string(nPortChannels));
      for (const auto& pair : memoryBuffers)
        if (pair.first < 0 || size_t(pair.first) >= nMemoryBuffers)
          throw Bounds(at + "memory-channel remote buffer " + std::to_string(pair.first) + " is not registered");
      for (const auto& pair : portBuffers)
        if (pair.first < 0 || size_t(pair.first) >= nPortBuffers)
          throw Bounds(at + "port-channel remote buffer " + std::to_string(pair.first) + " is not registered");
      for (size_t i = 0; i < ops.size(); i++) {
        const Operation& op = ops[i];
        std::string where = at + "op " + std::to_string(i) + ": ";
        if (op.type == OperationType::PIPELINE) {
          // handlePipeline reads nIterations as uint16_t and nOperations as uint8_t
          if (op.nIterations > UINT16_MAX) throw Bounds(where + "pipeline of more than 65535 iterations");
          if (i + 1 + op.nOperations > ops.size()) throw Bounds(where + "pipeline runs past the thread block's ops");
          continue;
        }
        if (op.type == OperationType::BARRIER) {
          if (op.deviceSyncerIndex >= MAX_DEVICE_SYNCERS) throw Bounds(where + "barrier_id >= MAX_DEVICE_SYNCERS");
          continue;
        }
        if (op.type == OperationType::SEM_ACQUIRE || op.type == OperationType::SEM_RELEASE) {
          for (uint32_t k = 0; k < op.nDeviceSemaphores; k++)
            if (op.deviceSemaphoreIds[k] >= p.semaphoreInfos.size())
              throw Bounds(where + "semaphore id " + std::to_string(op.deviceSemaphoreIds[k]) + " not declared");
          continue;
        }
        if (op.type == OperationType::NOP || op.type == OperationType::MULTI_LOAD_REDUCE_STORE ||
            op.type == OperationType::MULTI_STORE || op.type == OperationType::MULTI_STORE_PKT)
          continue;
        size_t available = op.channelType == ChannelType::MEMORY ? memory.size()
                           : op.channelType == ChannelType::PORT ? port.size()
                                                                 : SIZE_MAX;
        for (int k = 0; k < op.nChannels; k++)
          if (op.channelIndexes[k] >= available)
            throw Bounds(where + "channel id " + std::to_string(op.channelIndexes[k]) + " but the thread block has " +
                         std::to_string(available));
      }
    }
  }

  // The bytes each data op touches, in the layout execution_kernel.hpp gives them: packet ops
  // double scratch offsets and sizes (LL packets: data + flag). A pipeline's inner op runs
  // nIterations units from its offset, unit j at j * unit_size with min(size - j * unit_size,
  // unit_size) bytes in uint32 arithmetic, so a unit that starts past the op's range wraps to a
  // whole unit past it: refused, even where that stays inside the buffer (another range).
  // With reuse_resources, scratch offsets of a unit wrap modulo the scratch chunk size and the
  // scratch buffer is the executor's default one.
  static void regionChecks(const ExecutionPlan::Impl& p, const nlohmann::json& gpu, int rank, size_t inputSize,
                           size_t outputSize, Rank& result, const std::vector<Owner>& memoryOwners,
                           const std::vector<Owner>& portOwners) {
    const size_t scratchChunkSize = p.calMaxScratchChunkSize(result.scratchSize);
    if (p.reuseResources) result.scratchSize = size_t(1) << 27;  // defaultScratchBufferSize
    auto size = [&](BufferType t) -> size_t {
      return t == BufferType::INPUT ? inputSize : t == BufferType::OUTPUT ? outputSize : result.scratchSize;
    };
    int tb = 0;
    for (const auto& threadblock : gpu["threadblocks"]) {
      std::vector<Operation> ops = p.getOperations(tb);
      size_t i = 0;
      // lastStart: (nIterations - 1) * unit_size of the enclosing pipeline, unit: its unit_size
      auto visit = [&](const nlohmann::json& jop, const Operation& op, uint64_t lastStart, uint64_t unit) {
        if (!movesData(op.type)) return;
        std::string where = "thread block " + std::to_string(tb) + " op " + std::to_string(i);
        for (int side = 0; side < 2; side++) {
          const char* key = side == 0 ? "src_buff" : "dst_buff";
          if (!jop.contains(key)) continue;
          int count = side == 0 ? op.nInputs : op.nOutputs;
          for (int k = 0; k < count; k++) {
            const auto& buff = jop[key][k];
            Region region{rank, BufferType::NONE, 0, where + " " + key + "[" + std::to_string(k) + "]"};
            if (buff.contains("switch_channel_id")) {
              // the kernel indexes the block's switch channels with it (nvlsChannels_[...]) and
              // reaches the same range of the buffer every rank of the group binds
              int id = buff["switch_channel_id"];
              int tbId = threadblock["id"];
              const auto& switches = p.threadblockNvlsChannels.at(tbId);
              if (id < 0 || size_t(id) >= switches.size())
                throw Bounds(region.where + ": switch_channel_id " + std::to_string(id) + " but the thread block has " +
                             std::to_string(switches.size()));
              region.type = p.nvlsInfos.at(rank).at(switches[id]).bufferType;
            } else if (buff.contains("buffer_id")) {
              int id = buff["buffer_id"];
              bool memory = op.channelType == ChannelType::MEMORY;
              int tbId = threadblock["id"];  // as setupOperation's getRemoteBufferTypeWithId
              const auto& refs =
                  memory ? p.threadblockMemoryChannelBuffers.at(tbId) : p.threadblockPortChannelBuffers.at(tbId);
              const Owner& owner = (memory ? memoryOwners : portOwners).at(refs.at(id).first);
              region.owner = owner.rank;
              region.type = owner.type;
            } else {
              region.type = side == 0 ? op.inputBufferRefs[k].type : op.outputBufferRefs[k].type;
            }
            uint64_t offset = side == 0 ? op.inputOffsets[k] : op.outputOffsets[k];
            uint64_t extent = side == 0 ? op.inputBufferSizes[k] : op.outputBufferSizes[k];
            if (unit > 0 && lastStart > extent && !isPacketOp(op.type))  // packet ops take no unit offset
              throw Bounds(region.where + ": the pipeline's last unit starts " + std::to_string(lastStart) +
                           " bytes into a range of " + std::to_string(extent) +
                           ": min(size - offset, unit_size) wraps and moves a whole unit past the range");
            if (p.reuseResources && region.type == BufferType::SCRATCH)
              extent = std::min<uint64_t>(extent, scratchChunkSize);
            region.end = offset + extent;
            if (isPacketOp(op.type) && region.type == BufferType::SCRATCH) region.end *= 2;
            if (region.owner != rank) {
              result.remote.push_back(region);
            } else if (region.end > size(region.type)) {
              throw Bounds(region.where + ": bytes up to " + std::to_string(region.end) + " of its " +
                           bufferName(region.type) + " buffer of " + std::to_string(size(region.type)));
            }
          }
        }
      };
      for (const auto& jop : threadblock["ops"]) {
        const Operation& op = ops.at(i);
        visit(jop, op, 0, 0);
        i++;
        if (op.type == OperationType::PIPELINE) {
          uint64_t unit = op.unitSize;
          uint64_t lastStart = op.nIterations > 0 ? uint64_t(op.nIterations - 1) * unit : 0;
          for (const auto& inner : jop["ops"]) {
            visit(inner, ops.at(i), lastStart, unit);
            i++;
          }
        }
      }
      tb++;
    }
  }

  // One job, in the child: every rank, then the regions a rank touches in its peers' buffers.
  static int runJob(const std::string& path, size_t inputSize, size_t outputSize, FILE* out) {
    int rank = -1;
    try {
      std::ifstream file(path);
      nlohmann::json obj = nlohmann::json::parse(file);
      const auto& gpus = obj["gpus"];
      // the executor's rank comes from its communicator: rank 0 exists even if "gpus" is empty
      int nranks = std::max<int>(1, gpus.size());
      std::vector<Rank> ranks;
      for (rank = 0; rank < nranks; rank++) {
        fprintf(out, "rank %d\n", rank);
        fflush(out);
        ranks.push_back(checkRank(path, gpus, rank, nranks, inputSize, outputSize));
      }
      for (rank = 0; rank < nranks; rank++) {
        for (const Region& region : ranks[rank].remote) {
          auto t = region.type;
          if (region.owner < 0 || region.owner >= nranks)
            throw Bounds(region.where + ": a remote buffer of rank " + std::to_string(region.owner) +
                         ", not a rank of the plan");
          size_t limit = t == mscclpp::BufferType::INPUT    ? inputSize
                         : t == mscclpp::BufferType::OUTPUT ? outputSize
                                                            : ranks.at(region.owner).scratchSize;
          if (region.end > limit)
            throw Bounds(region.where + ": bytes up to " + std::to_string(region.end) + " of rank " +
                         std::to_string(region.owner) + "'s " + bufferName(t) + " buffer of " + std::to_string(limit));
        }
      }
      fprintf(out, "OK\n");
    } catch (const Bounds& e) {
      fprintf(out, "BOUNDS rank %d: %s\n", rank, e.what());
    } catch (const std::exception& e) {
      fprintf(out, "REJECT rank %d: %s\n", rank, e.what());
    }
    fflush(out);
    return 0;
  }

  static const bool registered;
};

const bool Executor::Impl::registered = (::runJob = &Executor::Impl::runJob, true);

}  // namespace mscclpp

namespace {

std::string oneLine(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

}  // namespace

int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream fields(line);
    std::string path;
    size_t inputSize = 0, outputSize = 0;
    if (!(fields >> path >> inputSize >> outputSize)) {
      std::cout << "USAGE expected: PLAN_PATH INPUT_BYTES OUTPUT_BYTES" << std::endl;
      continue;
    }
    int pipeFds[2];
    if (pipe(pipeFds) != 0) return 3;
    pid_t child = fork();
    if (child == 0) {
      close(pipeFds[0]);
      dup2(pipeFds[1], STDERR_FILENO);  // sanitizer and assertion messages
      FILE* out = fdopen(pipeFds[1], "w");
      runJob(path, inputSize, outputSize, out);
      _exit(0);
    }
    close(pipeFds[1]);
    std::string text;
    char buffer[4096];
    ssize_t n;
    while ((n = read(pipeFds[0], buffer, sizeof buffer)) > 0) text.append(buffer, n);
    close(pipeFds[0]);
    int status = 0;
    waitpid(child, &status, 0);
    std::istringstream lines(text);
    std::string last, verdict, rankLine, detail;
    while (std::getline(lines, last)) {
      if (last.rfind("rank ", 0) == 0) {
        rankLine = last;
      } else if (last == "OK" || last.rfind("REJECT ", 0) == 0 || last.rfind("BOUNDS ", 0) == 0) {
        verdict = last;
      } else {
        detail += last + " ";
      }
    }
    bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (clean && !verdict.empty()) {
      std::cout << verdict << std::endl;
    } else {
      std::string why = WIFSIGNALED(status) ? "signal " + std::to_string(WTERMSIG(status))
                                            : "exit " + std::to_string(WEXITSTATUS(status));
      std::cout << "CRASH " << rankLine << ": " << why << ": " << oneLine(detail) << std::endl;
    }
  }
  return 0;
}
