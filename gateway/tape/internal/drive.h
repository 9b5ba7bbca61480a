// Drive: the state of one simulated tape drive:
//
//   EMPTY -(robot fetch)-> LOADING -> READY -> LOCATING <-> READING|WRITING -> READY ... ->
//   REWINDING
//         -> UNLOADING -> EMPTY (robot puts the cartridge away)          plus DOWN (fault)
//
// READY with a cartridge is "mounted and idle". A drive that goes DOWN loses its cartridge to the
// robot (the library's recovery) and requeues the recall it was serving. The library owns the
// transitions (library.cc); this file holds the data and the state names.
//
// Thread-safety: plain data, guarded by the library's mutex.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace reelfs::gateway::tape {

enum class DriveState {
  kEmpty,
  kLoading,
  kReady,
  kLocating,
  kReading,
  kWriting,
  kRewinding,
  kUnloading,
  kDown
};

std::string_view DriveStateName(DriveState state);

struct Drive {
  std::string name;  // "drive0", ...
  DriveState state = DriveState::kEmpty;
  std::string cartridge;  // the one in the drive (LOADING .. UNLOADING), else ""
  std::string incoming;   // reserved: the robot is bringing (or will bring) this one
  // The robot brought `incoming` while the old cartridge was still rewinding or unloading
  // (fetched ahead, as real libraries do); it loads the moment the drive is empty.
  bool incoming_here = false;
  uint64_t head_block = 0;          // the head sits before this block
  uint64_t bytes_this_mount = 0;    // decides the rewind time before unload
  std::optional<uint64_t> serving;  // request id being located, read or written
  bool release_after_read = false;  // max-age preemption: unload once the current read ends
  // Bumped on every DOWN/UP so events scheduled for the old state are ignored when they fire.
  uint64_t generation = 0;
  double state_since = 0;
  double mounted_at = 0;
  double idle_since = 0;  // READY with nothing to do since; picks the drive to unload (LRU)
};

}  // namespace reelfs::gateway::tape
