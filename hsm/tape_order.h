// TapeOrder: the one order in which reelfs asks for restores of many objects, shared by
// `reelfs stage` (hsm::Stager::Plan) and a directory's `setfattr -n user.hsm.request -v stage`
// (fuse/core's TapeView).
//
// The order (docs/tape.md "Tape order"):
//  1. Objects with a tape hint first, one cartridge after the other: cartridges in the order of
//     their first (smallest) key, so the cartridge holding the earliest-written data (keys are
//     usually written in order) is mounted first and the tree comes online roughly in the order
//     a reader walks it;
//  2. within a cartridge, by block (an object without a block after those with one), then key,
//     so the drive reads the cartridge in one forward pass;
//  3. objects without a hint last, by key (usually write order, hence usually tape order too).
// The result does not depend on the order of the input.
//
// Thread-safety: a pure function.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "hsm/state.h"

namespace reelfs::hsm {

// One object to order: its key and its tape hint (null: none). Both are borrowed for the call.
struct TapeOrderItem {
  std::string_view key;
  const TapeHint* hint = nullptr;
};

// Indices into `items`, in tape order (above). Every index appears exactly once.
std::vector<size_t> TapeOrder(const std::vector<TapeOrderItem>& items);

}  // namespace reelfs::hsm
