// The tape state of one object as the client sees it (docs/semantics.md "Offline objects"),
// derived from what servers say (storage class, x-amz-restore / RestoreStatus, tape hints), from
// the local restore ledger and from GET outcomes. Pure functions: no I/O.
//
//   online    readable, not in an archive class (STANDARD, ...; versitygw's online files too)
//   offline   archive class, no restore running, no readable copy: a GET answers InvalidObjectState
//   staging   a restore is running (the server says so, or our ledger has a live request)
//   restored  archive class with a readable restored copy (until its expiry, if a real one)
//   unknown   nothing known yet (not probed), or what the server said could not be parsed
//
// Thread-safety: pure functions and plain values.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "s3/types.h"

namespace reelfs::hsm {

enum class State { kUnknown, kOnline, kOffline, kStaging, kRestored };

// "unknown", "online", "offline", "staging", "restored" (the user.hsm.state values).
std::string_view StateName(State state);
std::optional<State> ParseStateName(std::string_view name);
// online and restored objects can be read with a GET.
inline bool IsReadable(State state) { return state == State::kOnline || state == State::kRestored; }

// GLACIER and DEEP_ARCHIVE (not GLACIER_IR, which is readable), case-insensitive.
bool IsArchiveClass(std::string_view storage_class);

// Where an object sits on tape, when the server tells (docs/protocols/tape-hints.md). Parsed
// from ObjectInfo::hints (x-reelfs-tape-cartridge, -block, -position "wrap=W,lpos=L").
struct TapeHint {
  std::string cartridge;
  std::optional<uint64_t> block;
  std::optional<uint32_t> wrap;
  std::optional<uint64_t> lpos;
  bool operator==(const TapeHint&) const = default;
};
std::optional<TapeHint> TapeHintOf(const s3::ObjectInfo& info);

// What the local ledger knows that the server may not say (hsm/ledger.h).
struct LedgerView {
  bool requested = false;  // a restore request is recorded and has not failed or completed
};

// The state of `info` at wall time `now`:
//  - not an archive class: staging if the server says a restore is ongoing, else online;
//  - archive class with restore info: ongoing -> staging; a real expiry in the past -> offline;
//    otherwise restored (versitygw's 2050 placeholder counts as no expiry);
//  - archive class without restore info: staging if the ledger has a live request, else offline
//    (true for never-restored objects, which is the common case; a GET is the final word).
State Classify(const s3::ObjectInfo& info, const LedgerView& ledger, s3::WallTime now);

}  // namespace reelfs::hsm
