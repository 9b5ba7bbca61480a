// Helpers shared by the tape simulator tests: a discrete-mode config and a completion collector.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "gateway/tape/internal/library_impl.h"
#include "gateway/tape/library.h"

namespace reelfs::gateway::tape {

inline LibraryConfig DiscreteConfig(const std::string& policy = "batch", uint32_t drives = 1) {
  LibraryConfig c;
  c.mode = SimMode::kDiscrete;
  c.drives = drives;
  c.scheduler.policy = policy;
  return c;
}

inline std::unique_ptr<LibraryImpl> MakeLibrary(const LibraryConfig& config) {
  auto lib = Library::Create(config);
  REQUIRE_MESSAGE(lib.ok(), lib.status().ToString());
  return std::unique_ptr<LibraryImpl>(static_cast<LibraryImpl*>(std::move(lib).value().release()));
}

// Collects completions; the callbacks run on the RunUntilIdle caller's thread in kDiscrete mode.
struct Completions {
  std::vector<RecallCompletion> done;
  std::function<void(const RecallCompletion&)> Callback() {
    return [this](const RecallCompletion& c) { done.push_back(c); };
  }
};

inline RecallRequest Recall(const std::string& cartridge, uint64_t block, uint64_t bytes,
                            const std::string& label = "b/k") {
  return RecallRequest{label, Extent{cartridge, block, bytes}};
}

}  // namespace reelfs::gateway::tape
