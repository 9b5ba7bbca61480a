// tape::Library: the tape library simulator behind reelfs-gateway's archive: cartridges with a
// serpentine layout, drives with a state machine, robots with a move queue and a recall scheduler
// with pluggable policies, all driven by simulated time. A plain library: no sockets, no files, no
// SQLite. The gateway owns the catalog (object -> extent) and the bytes; the library decides *when*
// a recall completes and what it cost.
//
// Writes (SubmitWrite) are modelled like recalls: a drive mounts the cartridge, positions to the
// end of data (the extent's first block), streams the extent at the drive's rate and unloads later;
// they share the cartridge queues and the scheduler with recalls and show as "writing" on the
// timeline and under "writes" in the metrics. The bytes themselves are the gateway's business.
//
// Time: every duration the library reports is simulated time. The driver decides how simulated
// time relates to real time (see SimMode): a benchmark runs discrete events back to back, the
// gateway runs a scaled real-time clock (x1000 in CI) on the library's own thread.
//
// Thread-safety: every public member is safe to call from any thread. Completion callbacks run on
// the simulation thread (kScaled) or inside RunUntilIdle (kDiscrete), without library locks held;
// they must be quick (hand bulk work to another thread), may call Submit and must not destroy
// the library (in kScaled mode that would join the thread running them).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/json.h"
#include "common/status.h"
#include "gateway/tape/config.h"

namespace reelfs::gateway::tape {

// Simulated time since the library was created.
using SimDuration = std::chrono::duration<double>;  // seconds

// Where an object's bytes sit on a cartridge. Blocks are config.block_bytes each; block numbers
// increase in recording order (serpentine: not physical order).
struct Extent {
  std::string cartridge;  // volume serial, e.g. "RL0007L9"
  uint64_t start_block = 0;
  uint64_t bytes = 0;
};

// Physical position of a block, for the x-reelfs-tape-* hint headers and the timeline.
struct Position {
  uint32_t wrap = 0;
  uint32_t band = 0;
  uint32_t lpos = 0;  // longitudinal position, LPOS units
};

struct RecallRequest {
  std::string label;  // "bucket/key": shown in metrics and on the timeline
  Extent extent;
};

enum class RecallOutcome {
  kOk,          // the drive read the whole extent: the caller may copy the bytes back now
  kMediaError,  // the cartridge (or this extent) is damaged; other recalls are unaffected
  kStageFail,   // an injected stage failure (ScoutAM StageFail); never drawn for a write
  kShutdown,    // the library was destroyed first
};

struct RecallCompletion {
  uint64_t id = 0;
  RecallOutcome outcome = RecallOutcome::kOk;
  std::string detail;         // human-readable reason when not kOk
  SimDuration submitted{0};   // when Submit was called
  SimDuration first_byte{0};  // when the drive started reading the extent
  SimDuration done{0};        // when it finished (or failed)
  std::string drive;          // which drive served it, "" if none did
};

// Faults that live in the library (HTTP-level faults belong to the gateway).
struct Fault {
  enum class Kind { kMediaError, kDriveDown, kDriveUp, kRobotStall, kStageFail };
  Kind kind = Kind::kMediaError;
  std::string target;        // cartridge (kMediaError), drive name (kDriveDown/Up)
  SimDuration duration{0};   // kRobotStall
  double probability = 1.0;  // kStageFail: fraction of recalls that fail
};

class Library {
 public:
  // Validates `config` (InvalidArgument with the offending key) and, in kScaled mode, starts the
  // simulation thread.
  [[nodiscard]] static Result<std::unique_ptr<Library>> Create(const LibraryConfig& config);
  // Joins the simulation thread, then fails every outstanding recall with kShutdown (those
  // callbacks run on the destroying thread).
  virtual ~Library() = default;

  // Geometry, for the gateway's archive writer (which allocates blocks) and hint headers.
  [[nodiscard]] virtual uint64_t BlockBytes() const = 0;
  [[nodiscard]] virtual uint64_t CapacityBlocks() const = 0;
  [[nodiscard]] virtual Position PositionOf(uint64_t block) const = 0;

  // Makes a cartridge known (idempotent); it starts in a library slot.
  [[nodiscard]] virtual Status AddCartridge(std::string_view cartridge) = 0;

  // Queues a recall; `done` runs exactly once. Returns the request id (also in the completion).
  // An extent past the cartridge's capacity or on an unknown cartridge completes with
  // kMediaError.
  virtual uint64_t Submit(RecallRequest request,
                          std::function<void(const RecallCompletion&)> done) = 0;
  // Queues a write of `request.extent` (appended at the cartridge's end of data, which the
  // gateway allocated); `done` runs exactly once, as for Submit (kOk: the drive wrote it; a
  // damaged cartridge, an unknown one or an extent past its capacity: kMediaError).
  virtual uint64_t SubmitWrite(RecallRequest request,
                               std::function<void(const RecallCompletion&)> done) = 0;

  virtual void Inject(const Fault& fault) = 0;

  // kDiscrete only: runs events until nothing is pending; returns the simulated time reached.
  virtual SimDuration RunUntilIdle() = 0;
  [[nodiscard]] virtual SimDuration Now() const = 0;

  // Counters and distributions since creation (mounts, bytes per mount, locate share, drive and
  // robot utilization, queue waits, per-request completion times, time to first byte), as one
  // JSON object. Documented in docs/protocols/admin.md.
  [[nodiscard]] virtual Json MetricsDocument() const = 0;
  // The same as text.
  [[nodiscard]] std::string MetricsJson() const { return DumpJson(MetricsDocument()); }
  // What every drive and robot did over time, as a standalone SVG document.
  [[nodiscard]] virtual std::string TimelineSvg() const = 0;
};

}  // namespace reelfs::gateway::tape
