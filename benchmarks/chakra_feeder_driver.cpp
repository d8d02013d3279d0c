// Drives Chakra's ET feeder over one trace per rank as ASTRA-sim's CustomAlgorithm does
// (benchmarks/chakra_outside.py builds and runs it; no Chakra code is in this repository).
// Built with -DFEEDER_V3 against astra-sim/chakra src/feeder_v3 (what ASTRA-sim links since
// August 2025), else against mlcommons/chakra src/feeder (Chakra's own feeder, which ASTRA-sim
// linked before). Usage: driver [--feed-only] RANK0.et RANK1.et ...
// Every rank issues its dependency-free nodes and reads comm_dst / comm_src / comm_size /
// comm_tag through the feeder's accessors; a send completes when issued (the analytical
// backend runs its callback on arrival, whether or not the receive is posted), a receive when
// a send of the same (tag mod 500000000, source, destination, size) has arrived (i-th send
// meets i-th receive), a compute at once; any other node type is never finished, as in
// CustomAlgorithm::issue. --feed-only finishes every node on issue (a workload trace).
// Prints one line per rank, then ACCEPT <nodes> or REJECT | <reason> | ...
#include <cstdint>
#include <deque>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "et_def.pb.h"
#include "et_feeder.h"

#ifdef FEEDER_V3
using Feeder = Chakra::FeederV3::ETFeeder;
#else
using Feeder = Chakra::ETFeeder;
#endif

using Key = std::tuple<uint64_t, uint64_t, uint64_t, uint64_t>;  // tag, src, dst, size
static const uint64_t TAG_MODULUS = 500000000;  // Sys::FrontEndSendRecvType::COLLECTIVE

static std::vector<std::string> reasons;
static void reject(const std::string& why) {
  if (reasons.size() < 8) reasons.push_back(why);
}

// Nodes in a file (varint-delimited GlobalMetadata then Nodes), for the end-of-run count.
static size_t count_nodes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  size_t messages = 0;
  while (true) {
    uint64_t size = 0;
    int shift = 0;
    int c;
    bool any = false;
    while ((c = in.get()) != EOF) {
      any = true;
      size |= uint64_t(c & 0x7f) << shift;
      shift += 7;
      if (!(c & 0x80)) break;
    }
    if (!any) break;
    in.seekg(size, std::ios::cur);
    ++messages;
  }
  return messages == 0 ? 0 : messages - 1;
}

struct Rank {
  int index;
  std::unique_ptr<Feeder> feeder;
  size_t nodes = 0, finished = 0;
  std::deque<std::pair<Key, uint64_t>> waiting;  // posted receives
  std::set<uint64_t> stuck;                      // taken, never finish
};

static std::map<Key, uint64_t> arrived;  // messages in the network per key
static int n_ranks;
static bool feed_only = false;  // finish every node on issue (a workload trace)

static void finish(Rank& r, uint64_t id) {
#ifdef FEEDER_V3
  r.feeder->getDependancyResolver().finish_node(id);
#else
  r.feeder->freeChildrenNodes(id);
  r.feeder->removeNode(id);
#endif
  ++r.finished;
}

// Issue one node as CustomAlgorithm::issue does; sends and computes finish at once (a send's
// callback fires on arrival, whether or not the receive is posted), receives wait.
template <typename NodePtr>
static void issue(Rank& r, NodePtr node) {
  uint64_t id = node->id();
  auto type = node->type();
  if (feed_only) {
    finish(r, id);
    return;
  }
  std::ostringstream where;
  where << "rank " << r.index << " node " << id;
  if (type == ChakraProtoMsg::COMM_SEND_NODE || type == ChakraProtoMsg::COMM_RECV_NODE) {
    uint64_t peer, size, tag, src, dst;
    if (type == ChakraProtoMsg::COMM_SEND_NODE) {
#ifdef FEEDER_V3
      (void)node->comm_src(r.index);  // CustomAlgorithm: comm_src(owner id), a default
#endif
      peer = node->comm_dst();
      src = r.index;
      dst = peer;
    } else {
      peer = node->comm_src();
      src = peer;
      dst = r.index;
    }
    size = node->comm_size();
    tag = node->comm_tag();
    if (peer >= uint64_t(n_ranks) || peer == uint64_t(r.index)) {
      reject(where.str() + ": peer " + std::to_string(peer) + " is not another rank");
      r.stuck.insert(id);
      return;
    }
    if (size == 0) {
      reject(where.str() + ": comm_size reads as 0 (the analytical backend asserts > 0)");
      r.stuck.insert(id);
      return;
    }
    Key key{tag % TAG_MODULUS, src, dst, size};
    if (type == ChakraProtoMsg::COMM_SEND_NODE) {
      ++arrived[key];
      finish(r, id);
    } else {
      r.waiting.emplace_back(key, id);
    }
  } else if (type == ChakraProtoMsg::COMP_NODE) {
    finish(r, id);
  } else {
    reject(where.str() + ": node type " + std::to_string(int(type)) + " is never finished");
    r.stuck.insert(id);
  }
}

// Issue every dependency-free node of a rank; true if anything happened.
static bool step(Rank& r) {
  bool progress = false;
#ifdef FEEDER_V3
  auto& resolver = r.feeder->getDependancyResolver();
  while (true) {
    std::set<uint64_t> free(
        resolver.get_dependancy_free_nodes().begin(), resolver.get_dependancy_free_nodes().end());
    if (free.empty()) break;
    for (uint64_t id : free) {
      auto node = r.feeder->lookupNode(id);
      resolver.take_node(id);
      issue(r, node);
      progress = true;
    }
  }
#else
  while (auto node = r.feeder->getNextIssuableNode()) {
    issue(r, node);
    progress = true;
  }
#endif
  for (auto it = r.waiting.begin(); it != r.waiting.end();) {
    auto found = arrived.find(it->first);
    if (found != arrived.end() && found->second > 0) {
      if (--found->second == 0) arrived.erase(found);
      uint64_t id = it->second;
      it = r.waiting.erase(it);
      finish(r, id);
      progress = true;
    } else {
      ++it;
    }
  }
  return progress;
}

int main(int argc, char** argv) {
  int first = 1;
  if (argc > 1 && std::string(argv[1]) == "--feed-only") {
    feed_only = true;
    first = 2;
  }
  n_ranks = argc - first;
  std::vector<Rank> ranks(n_ranks);
  for (int i = 0; i < n_ranks; ++i) {
    ranks[i].index = i;
    ranks[i].nodes = count_nodes(argv[first + i]);
    try {
      ranks[i].feeder.reset(new Feeder(argv[first + i]));
    } catch (const std::exception& e) {
      std::cout << "REJECT rank " << i << ": the feeder refuses the file: " << e.what() << "\n";
      return 1;
    }
  }
  try {
    bool progress = true;
    while (progress) {
      progress = false;
      for (auto& r : ranks) progress = step(r) || progress;
    }
  } catch (const std::exception& e) {
    reject(std::string("the feeder throws: ") + e.what());
  }
  size_t total = 0;
  for (auto& r : ranks) {
    std::cout << "rank " << r.index << " nodes " << r.nodes << " finished " << r.finished
              << "\n";
    total += r.nodes;
    if (r.finished != r.nodes) {
      std::ostringstream why;
      why << "rank " << r.index << ": " << r.nodes - r.finished << " of " << r.nodes
          << " nodes never finish (" << r.waiting.size() << " receives wait for no send)";
      reject(why.str());
    }
  }
  for (auto& [key, count] : arrived) {
    std::ostringstream why;
    why << count << " send(s) tag " << std::get<0>(key) << " " << std::get<1>(key) << " -> "
        << std::get<2>(key) << " size " << std::get<3>(key) << " never received";
    reject(why.str());
  }
  if (reasons.empty()) {
    std::cout << "ACCEPT " << total << " nodes\n";
    return 0;
  }
  std::cout << "REJECT";
  for (auto& why : reasons) std::cout << " | " << why;
  std::cout << "\n";
  return 1;
}
