#include "gateway/tape/internal/drive.h"

namespace reelfs::gateway::tape {

std::string_view DriveStateName(DriveState state) {
  switch (state) {
    case DriveState::kEmpty:
      return "empty";
    case DriveState::kLoading:
      return "loading";
    case DriveState::kReady:
      return "ready";
    case DriveState::kLocating:
      return "locating";
    case DriveState::kReading:
      return "reading";
    case DriveState::kWriting:
      return "writing";
    case DriveState::kRewinding:
      return "rewinding";
    case DriveState::kUnloading:
      return "unloading";
    case DriveState::kDown:
      return "down";
  }
  return "unknown";
}

}  // namespace reelfs::gateway::tape
