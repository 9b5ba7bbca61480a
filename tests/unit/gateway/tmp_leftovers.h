// Test helper: the temporary files a store left in its process's tmp directory
// (FsRoot::tmp_path(); `.alive` is the directory's liveness lock, not a leftover).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace reelfs::gateway::testing {

inline std::vector<std::string> TmpLeftovers(const std::string& tmp_dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(tmp_dir)) {
    if (e.path().filename() != ".alive") out.push_back(e.path().filename().string());
  }
  return out;
}

}  // namespace reelfs::gateway::testing
